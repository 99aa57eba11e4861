/**
 * A list request whose items stay as the API server sent them (plain JSON, the shape watch
 * events have). client-node's generated list calls deserialise every item into its model
 * classes (ObjectSerializer), which the informers then had to turn back into JSON: at 10,000
 * Services and EndpointSlices in the VM that round trip cost more than the request itself.
 * The request is an apiRequest (api-request.ts): client-node's authentication of the
 * kubeconfig, the token file re-read, metrics.
 */
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { ApiException, KubeConfig } from './client-node';
import { ApiKubeConfig, apiRequest, statusMessage } from './api-request';

/** The query of a list request: selectors and paging. */
export interface ListQuery {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** at most this many items; the answer's metadata.continue asks for the rest */
  readonly limit?: number;
  readonly continue?: string;
}

/**
 * Items per list page: 2,000, where client-go's pager asks for 500. A node's start lists every
 * Service and EndpointSlice, so the page size sets how many requests a start costs the API
 * server; a larger page costs the start more memory until the quiet-time collection (both
 * measured in scripts/bench/README.md, "List pages of 500 or 2,000").
 */
export const LIST_PAGE_SIZE = 2000;

/**
 * GET `path` (e.g. /api/v1/services) with the query; throws ApiException (code = HTTP status,
 * headers['retry-after'] when the server sent one) unless 200, ResponseTooLargeError for a
 * body past the cap (api-request.ts RESPONSE_MAX_BYTES).
 */
export async function listRaw<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  query: ListQuery = {},
): Promise<KubernetesListObject<T>> {
  const res = await apiRequest(kc, {
    method: 'GET',
    path,
    query: {
      labelSelector: query.labelSelector,
      fieldSelector: query.fieldSelector,
      limit: query.limit || undefined,
      continue: query.continue,
    },
    ...(kc instanceof ApiKubeConfig ? { accept: kc.accept } : {}),
  });
  const body = res.body;
  if (res.status !== 200) {
    // Retry-After as ApiException carries headers (the informers wait at least that long)
    const headers: Record<string, string> = res.retryAfter !== undefined ? { 'retry-after': res.retryAfter } : {};
    throw new ApiException(res.status, `list ${path}: HTTP ${res.status}: ${statusMessage(body)}`, body, headers);
  }
  const list = (res.object ?? JSON.parse(body)) as KubernetesListObject<T>;
  if (!Array.isArray(list.items))
    throw new ApiException(res.status, `list ${path}: the response has no items array`, body, {});
  return list;
}

/**
 * A list in pages of `pageSize`, as client-go's pager lists: each page's items go to `onPage`
 * as they arrive, so no more than a page of objects is held as text and JSON at once (an
 * unpaged answer of every EndpointSlice is one string, and one parse, of all of them). Every page reads
 * the first one's snapshot; its resourceVersion is returned. A continue token that expired
 * meanwhile (410) falls back to one unpaged list, after `onRestart()` (client-go's
 * FullListIfExpired): what the pages delivered so far may be out of date.
 */
export async function listPaged<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  query: ListQuery,
  onPage: (items: T[]) => void,
  onRestart: () => void,
  pageSize = LIST_PAGE_SIZE,
): Promise<string> {
  let token = '';
  let resourceVersion = '';
  for (;;) {
    let page: KubernetesListObject<T>;
    try {
      page = await listRaw<T>(kc, path, { ...query, limit: pageSize, continue: token || undefined });
    } catch (e) {
      if (token === '' || !(e instanceof ApiException) || e.code !== 410) throw e;
      onRestart();
      const all = await listRaw<T>(kc, path, query);
      onPage(all.items);
      return all.metadata?.resourceVersion ?? '';
    }
    if (token === '') resourceVersion = page.metadata?.resourceVersion ?? '';
    onPage(page.items);
    token = (page.metadata as { continue?: string } | undefined)?.continue ?? '';
    if (token === '') return resourceVersion;
  }
}
