/**
 * Label and field selectors as kube-apiserver parses them (k8s.io/apimachinery
 * pkg/labels and pkg/fields), compiled once into a predicate.
 *
 * Label selector terms, comma-separated: `k=v`, `k==v`, `k!=v` (also true when the label is
 * missing), `k` (exists), `!k` (does not exist), `k in (a,b)`, `k notin (a,b)` (also true
 * when missing). Field selector terms: `field=v`, `field==v`, `field!=v`.
 */
import { KubeIpvsError } from '../lib/errors';

/** A selector the fake API server cannot parse; answered with 400 BadRequest. */
export class SelectorError extends KubeIpvsError {
  readonly code = 'KIPVS_SELECTOR' as const;
}

export type Labels = Readonly<Record<string, string>> | undefined;
export type LabelPredicate = (labels: Labels) => boolean;

/** Splits on commas outside parentheses. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms.map((t) => t.trim()).filter((t) => t !== '');
}

const KEY = /^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$/;

function checkKey(key: string, selector: string): string {
  if (!KEY.test(key)) throw new SelectorError(`invalid label key "${key}" in selector "${selector}"`);
  return key;
}

const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkValue(value: string, selector: string): string {
  if (!VALUE.test(value)) throw new SelectorError(`invalid label value "${value}" in selector "${selector}"`);
  return value;
}

function compileLabelTerm(term: string, selector: string): LabelPredicate {
  let m = /^(\S+?)\s+(in|notin)\s*\((.*)\)$/.exec(term);
  if (m) {
    // the regexes' groups are not optional: a match has every one
    const key = checkKey(m[1]!, selector);
    const values = new Set(m[3]!.split(',').map((v) => checkValue(v.trim(), selector)));
    return m[2] === 'in'
      ? (l) => l?.[key] !== undefined && values.has(l[key])
      : (l) => l?.[key] === undefined || !values.has(l[key]);
  }
  m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
  if (m) {
    const key = checkKey(m[1]!, selector);
    const value = checkValue(m[3]!, selector);
    return m[2] === '!='
      ? (l) => l === undefined || l[key] !== value
      : (l) => l !== undefined && key in l && l[key] === value;
  }
  m = /^(!?)\s*(\S+)$/.exec(term);
  if (m) {
    const key = checkKey(m[2]!, selector);
    return m[1] === '!' ? (l) => l === undefined || !(key in l) : (l) => l !== undefined && key in l;
  }
  throw new SelectorError(`unable to parse requirement "${term}" in label selector "${selector}"`);
}

/** Compiles a label selector; '' or undefined selects everything. */
export function compileLabelSelector(selector: string | undefined | null): LabelPredicate {
  if (!selector) return () => true;
  const preds = splitTerms(selector).map((t) => compileLabelTerm(t, selector));
  return (labels) => preds.every((p) => p(labels));
}

/** An object as the field selector sees it. */
export interface FieldSubject {
  readonly metadata: { readonly name?: string; readonly namespace?: string };
  readonly spec?: unknown;
}
export type FieldPredicate = (obj: FieldSubject) => boolean;

const FIELDS: Readonly<Record<string, (o: FieldSubject) => string>> = {
  'metadata.name': (o) => o.metadata.name ?? '',
  'metadata.namespace': (o) => o.metadata.namespace ?? '',
  // Services' (kube-proxy selects spec.clusterIP!=None)
  'spec.clusterIP': (o) => String((o.spec as { clusterIP?: unknown } | undefined)?.clusterIP ?? ''),
};

/** Compiles a field selector over metadata.name, metadata.namespace and (Services) spec.clusterIP. */
export function compileFieldSelector(selector: string | undefined | null): FieldPredicate {
  if (!selector) return () => true;
  const preds = splitTerms(selector).map((term): FieldPredicate => {
    const m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (!m) throw new SelectorError(`invalid field selector term "${term}" in "${selector}"`);
    const get = FIELDS[m[1]!];
    if (!get) throw new SelectorError(`field label not supported: ${m[1]}`);
    const value = m[3];
    return m[2] === '!=' ? (o) => get(o) !== value : (o) => get(o) === value;
  });
  return (obj) => preds.every((p) => p(obj));
}
