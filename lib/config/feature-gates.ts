// featureGates (the file) and --feature-gates (the flag, merged over it) checked as kube-proxy
// checks them (component-base featuregate SetFromMap over kube-proxy's DefaultFeatureGate): a
// name it does not know is refused, "unrecognized feature gate: NAME"; a gate locked to its
// default cannot be set to the other value. kube-ipvs has no gate of its own and reads none
// of kube-proxy's: a gate kube-proxy knows is accepted and noted once at info, so a
// configuration written for kube-proxy starts and the operator learns it does nothing here.
import { ConfigError } from '../errors';
import { KUBE_PROXY_FEATURE_GATES } from './feature-gates-list';

/** A gate set that is accepted, for the info line saying it has no effect. */
export interface FeatureGateNote {
  readonly field: string;
  readonly message: string;
}

/** The errors (unknown or locked gates) and the notes (known gates, no effect) of one map. */
export function checkFeatureGates(
  gates: Readonly<Record<string, boolean>>,
  field: string,
): { errors: ConfigError[]; notes: FeatureGateNote[] } {
  const errors: ConfigError[] = [];
  const notes: FeatureGateNote[] = [];
  for (const [name, value] of Object.entries(gates)) {
    const spec = KUBE_PROXY_FEATURE_GATES.get(name);
    if (spec === undefined) {
      errors.push(new ConfigError(field, `unrecognized feature gate: ${name}`));
    } else if (spec.lockedTo !== undefined && spec.lockedTo !== value) {
      errors.push(
        new ConfigError(field, `cannot set feature gate ${name} to ${value}, feature is locked to ${spec.lockedTo}`),
      );
    } else {
      notes.push({
        field: field.startsWith('--') ? field : `${field}.${name}`,
        message: `feature gate ${name}=${value} (${spec.stage} in kube-proxy) has no effect in kube-ipvs; accepted`,
      });
    }
  }
  return { errors, notes };
}
