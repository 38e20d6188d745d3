import type { PaymentChannelClient } from './client.js';
import type { SendRequest } from './transport.js';
import type { Case, CaseDetail, CaseList, CaseListParams } from './types.js';

const id = (value: string) => encodeURIComponent(value);

export function casesResource(request: SendRequest): Pick<PaymentChannelClient, 'cases'> {
  const listCases = (params: CaseListParams = {}) =>
    request<CaseList>({
      method: 'GET',
      path: '/cases',
      query: { status: params.status, paymentId: params.paymentId, cursor: params.cursor, limit: params.limit },
      idempotent: true,
    });

  async function* iterateCases(params: Omit<CaseListParams, 'cursor'> = {}): AsyncIterableIterator<Case> {
    let cursor: string | undefined;
    do {
      const page = await listCases({ ...params, cursor });
      yield* page.items;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  return {
    cases: {
      // A repeat opens no second case: a payment holds one unresolved case per type, so a retry
      // after a lost answer is refused with the id of the case the first attempt opened.
      open: (params) =>
        request<Case>({ method: 'POST', path: '/cases', body: { paymentId: params.paymentId, type: params.type, description: params.description }, idempotent: true }),
      get: (caseId) => request<CaseDetail>({ method: 'GET', path: `/cases/${id(caseId)}`, idempotent: true }),
      list: listCases,
      iterate: iterateCases,
      comment: (caseId, text) => request<CaseDetail>({ method: 'POST', path: `/cases/${id(caseId)}/comments`, body: { text }, idempotent: false }),
    },
  };
}
