/**
 * What the informers keep of an API object: all of it but metadata.managedFields (server-side
 * apply's record of which manager owns which field) and the annotation
 * kubectl.kubernetes.io/last-applied-configuration (client-side apply's copy of the whole
 * object as last applied). A proxy reads neither, and on a real cluster either can be the
 * larger part of an object's JSON; every Service and EndpointSlice stays in the informers'
 * cache for the life of the process. (client-go informers take such a transform too;
 * kube-ipvs applies it to list items and watch events alike.)
 */
import type { KubernetesObject } from '@kubernetes/client-node';

/** Annotation where kubectl's client-side apply keeps a copy of the object. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** The object as the informers keep it; the same object when there is nothing to drop. */
export function prunedObject<T>(obj: T): T {
  const md = (obj as KubernetesObject | undefined)?.metadata;
  if (!md) return obj;
  const lastApplied = md.annotations?.[LAST_APPLIED_ANNOTATION] !== undefined;
  if (md.managedFields === undefined && !lastApplied) return obj;
  const { managedFields: _dropped, ...metadata } = md;
  if (lastApplied) {
    const { [LAST_APPLIED_ANNOTATION]: _copy, ...annotations } = md.annotations!;
    metadata.annotations = annotations;
  }
  return { ...obj, metadata };
}
