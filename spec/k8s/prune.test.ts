import { LAST_APPLIED_ANNOTATION, prunedObject } from '../../lib/k8s/prune';

describe('prunedObject', () => {
  const svc = {
    metadata: { name: 's', namespace: 'n', annotations: { keep: 'me' }, labels: { a: 'b' } },
    spec: { clusterIP: '10.96.0.1' },
  };

  it('drops managedFields and the last-applied annotation, and nothing else', () => {
    const heavy = {
      ...svc,
      metadata: {
        ...svc.metadata,
        managedFields: [{ manager: 'm' }],
        annotations: { ...svc.metadata.annotations, [LAST_APPLIED_ANNOTATION]: '{"big":1}' },
      },
    };
    expect(prunedObject(heavy)).toEqual(svc);
    // the input is left as it was (the caller may still hold it)
    expect(heavy.metadata.managedFields).toHaveLength(1);
    expect(heavy.metadata.annotations[LAST_APPLIED_ANNOTATION]).toBe('{"big":1}');
    expect(prunedObject({ ...svc, metadata: { ...svc.metadata, managedFields: [] } })).toEqual(svc);
  });

  it('returns the same object when there is nothing to drop (no copy per event)', () => {
    expect(prunedObject(svc)).toBe(svc);
    const status = { kind: 'Status', code: 410 };
    expect(prunedObject(status)).toBe(status);
    expect(prunedObject(undefined)).toBeUndefined();
    expect(prunedObject(null)).toBeNull();
  });
});
