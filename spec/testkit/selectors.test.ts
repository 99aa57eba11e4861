import { compileFieldSelector, compileLabelSelector, SelectorError } from '../../testkit/selectors';

interface LabelCase {
  name: string;
  selector: string;
  labels: Record<string, string> | undefined;
  want: boolean;
}

describe('compileLabelSelector', () => {
  const app = { app: 'web', tier: 'front' };
  it.each<LabelCase>([
    { name: 'empty selects all', selector: '', labels: undefined, want: true },
    { name: '= match', selector: 'app=web', labels: app, want: true },
    { name: '== match', selector: 'app==web', labels: app, want: true },
    { name: '= other value', selector: 'app=db', labels: app, want: false },
    { name: '= missing label', selector: 'app=web', labels: undefined, want: false },
    { name: '!= other value', selector: 'app!=db', labels: app, want: true },
    { name: '!= same value', selector: 'app!=web', labels: app, want: false },
    { name: '!= missing label', selector: 'app!=web', labels: {}, want: true },
    { name: 'exists', selector: 'tier', labels: app, want: true },
    { name: 'exists, missing', selector: 'zone', labels: app, want: false },
    { name: 'does not exist', selector: '!zone', labels: app, want: true },
    { name: 'does not exist, present', selector: '!tier', labels: app, want: false },
    { name: 'in', selector: 'app in (db, web)', labels: app, want: true },
    { name: 'in, not listed', selector: 'app in (db,cache)', labels: app, want: false },
    { name: 'in, missing', selector: 'zone in (a)', labels: app, want: false },
    { name: 'notin', selector: 'app notin (db)', labels: app, want: true },
    { name: 'notin, listed', selector: 'app notin (db,web)', labels: app, want: false },
    { name: 'notin, missing', selector: 'zone notin (a)', labels: app, want: true },
    { name: 'AND of terms', selector: 'app=web,tier in (front),!zone', labels: app, want: true },
    { name: 'AND, one fails', selector: 'app=web,tier=back', labels: app, want: false },
    {
      name: "kube-proxy's selector, headless service",
      selector: '!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless',
      labels: { 'service.kubernetes.io/headless': '' },
      want: false,
    },
    {
      name: "kube-proxy's selector, plain service",
      selector: '!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless',
      labels: { app: 'x' },
      want: true,
    },
  ])('$name', ({ selector, labels, want }) => {
    expect(compileLabelSelector(selector)(labels)).toBe(want);
  });

  it.each(['app=(x', 'a b c', '=x'])('rejects %j naming the selector', (bad) => {
    expect(() => compileLabelSelector(bad)).toThrow(SelectorError);
  });
});

describe('compileFieldSelector', () => {
  const obj = { metadata: { name: 'n1', namespace: 'ns' } };
  it.each([
    ['metadata.name=n1', true],
    ['metadata.name==n1', true],
    ['metadata.name=n2', false],
    ['metadata.name!=n2', true],
    ['metadata.namespace=ns,metadata.name=n1', true],
    ['metadata.namespace!=ns', false],
  ] as const)('%s -> %s', (sel, want) => {
    expect(compileFieldSelector(sel)(obj)).toBe(want);
  });

  it('rejects an unsupported field as the apiserver does', () => {
    expect(() => compileFieldSelector('spec.nodeName=x')).toThrow('field label not supported: spec.nodeName');
  });
});
