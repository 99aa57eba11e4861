/**
 * What the informers keep of an API object: all of it but metadata.managedFields, server-side
 * apply's record of which manager owns which field. A proxy never reads it, and on a real
 * cluster it is often the larger part of an object's JSON; every Service and EndpointSlice
 * stays in the informers' cache for the life of the process. (client-go informers take such
 * a transform too; kube-ipvs applies it to list items and watch events alike.)
 */
import type { KubernetesObject } from '@kubernetes/client-node';

export function withoutManagedFields<T>(obj: T): T {
  const md = (obj as KubernetesObject | undefined)?.metadata;
  if (md?.managedFields === undefined) return obj;
  const { managedFields: _dropped, ...metadata } = md;
  return { ...obj, metadata };
}
