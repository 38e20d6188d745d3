import { SANDBOX_SCENARIOS, SCENARIO_DESCRIPTIONS } from '../../domain/sandbox-scenarios.js';

/*
 * Example values of the OpenAPI document, taken from the service's real answers (a local run
 * against the simulator's fixtures). test/integration/openapi.test.ts checks each against the
 * schema it illustrates.
 */

const PAYMENT_ID = '52c8dc3e-a593-457e-a6cf-59e6e03650b7';
const INVOICE_ID = '83b47ac4-92e6-4b9c-b063-a623a9cc1f6f';
const PARTNER_ID = '8c93c40c-2c15-4997-a084-f84d7338892e';
const WEBHOOK_ID = 'ab6378ea-fc44-4927-90ea-3a735ff903eb';
const DELIVERY_ID = 'f955ff13-fab8-493b-a7e4-d4687c1999f7';
const EVENT_ID = '3f1d7c52-8e0b-4a57-9c4e-2b6f1e0d9a84';
/** A bank's own reference of the payment (X-Partner-Reference). */
const PARTNER_REFERENCE = 'TXN-20261125-000417';

const CASE_ID = '6a0f4a5e-3c1b-4d8e-9f27-5b1c0d2e7a93';

export const EXAMPLE_IDS = { PAYMENT_ID, INVOICE_ID, WEBHOOK_ID, DELIVERY_ID, EVENT_ID, PARTNER_REFERENCE, CASE_ID };

/** A paid_not_updated case as POST /cases answers it. */
export const openedCase = {
  id: CASE_ID,
  paymentId: PAYMENT_ID,
  type: 'paid_not_updated',
  status: 'open',
  description: 'The customer paid at 10:02 and the tax office still shows the invoice unpaid',
  createdAt: '2026-11-25T02:05:00.000Z',
  dueAt: '2026-11-26T02:05:00.000Z',
  updatedAt: '2026-11-25T02:05:00.000Z',
  resolution: null,
};

/** The case once the bank added a note, as POST /cases/{id}/comments answers it. */
export const commentedCase = {
  ...openedCase,
  updatedAt: '2026-11-25T02:05:00.500Z',
  comments: [{ author: 'partner', text: 'Receipt number 000417 attached by the customer', createdAt: '2026-11-25T02:05:00.500Z' }],
};

/** The same case once the service's fresh check found the payment confirmed, as GET /cases/{id} shows it. */
export const resolvedCase = {
  ...commentedCase,
  status: 'resolved',
  updatedAt: '2026-11-25T02:05:01.000Z',
  resolution: {
    outcome: 'confirmed',
    note: 'The ministry confirms the payment (confirmed at 2026-11-25T02:02:11.000Z); the invoice is paid there, and its own view follows.',
    resolvedAt: '2026-11-25T02:05:01.000Z',
    by: 'service',
  },
};

/** A case an operator took and answered with the ministry's reference, as GET /cases lists it. */
const answeredCase = {
  id: '0d7e5b2a-9c41-4f3e-8a16-2e4b7c9d1f05',
  paymentId: '1b9e4c7d-3a52-4f08-b6e1-7d2c9a5f3e40',
  type: 'canceled_not_reversed',
  status: 'resolved',
  description: 'The payment was canceled and the money has not come back to the customer',
  createdAt: '2026-11-24T06:40:12.310Z',
  dueAt: '2026-11-29T06:40:12.310Z',
  updatedAt: '2026-11-25T01:15:47.902Z',
  resolution: {
    outcome: 'reversed',
    ministryReference: 'MOF-REV-2026-11-0093',
    note: 'The ministry returned the money on 2026-11-24; the customer sees it within one banking day',
    resolvedAt: '2026-11-25T01:15:47.902Z',
    by: 'operator',
  },
};

/** The same, as GET /cases/{id} shows it. */
export const operatorResolvedCase = {
  ...answeredCase,
  comments: [{ author: 'operator', text: 'Asked the ministry; waiting for its answer', createdAt: '2026-11-24T09:02:31.554Z' }],
};

/** GET /cases: a page of two, newest first, with the cursor of the next. */
export const caseList = { items: [openedCase, answeredCase], nextCursor: 'YzE6OGM5M2M0MGMtMmMxNS00OTk3LWEwODQtZjg0ZDczMzg4OTJlOjEyMDc' };

export const invoice = {
  id: INVOICE_ID,
  description: 'Төлбөр',
  amount: 12000.5,
  status: 'open',
  dueDate: '2099-12-31T00:00:00.000Z',
  issuedAt: '2025-01-15T02:00:00.000Z',
  vehicleNo: null,
  payer: { register: '7000001', name: 'Тест ХХК' },
  payee: { id: 'ORG-100', name: 'Сангийн яам' },
  year: 2025,
};

export const invoiceList = {
  invoices: [
    invoice,
    {
      id: 'ff51c125-5154-457c-b728-b1ec014b78b4',
      description: 'Төлбөр',
      amount: 50000,
      status: 'overdue',
      dueDate: '2024-01-01T00:00:00.000Z',
      issuedAt: '2025-01-15T02:00:00.000Z',
      vehicleNo: '9999ТЕС',
      payer: { register: '7000001', name: 'Тест ХХК' },
      payee: { id: 'ORG-300', name: 'Цагдаагийн ерөнхий газар' },
    },
  ],
  total: 62000.5,
};

const QR_TEXT =
  '00020101021227340016A0000009990000010110MN-ORG-100520493115303496540712000.55802MN5912Sangiin yaam6011ULAANBAATAR' +
  '6258012552c8dc3ea593457ea6cf59e6e05254WFRCU3G64SB0OMY45NB8VOAF64210002MN0111Сангийн яам6304FA58';

export const paymentCreated = {
  success: true,
  id: PAYMENT_ID,
  status: 'submitted',
  amount: 12000.5,
  invoiceId: INVOICE_ID,
  invoiceIds: [INVOICE_ID],
  partnerReference: PARTNER_REFERENCE,
  qrpay: {
    qrText: QR_TEXT,
    qrImage: 'iVBORw0KGgoAAAANSUhEUgAAAPQAAAD0AQAAAACEVDZTAAADTElEQVR4Ae2YQW4cUQhEuQH3vyU3IHqPbkeWYq9SUSJlRhrLXYvfQFEUv/b7T30P73/8+…',
    shortUrl: `http://127.0.0.1:3000/q/${PAYMENT_ID}`,
    urls: [
      {
        name: 'Khan Bank',
        description: 'Хаан банк',
        logo: 'https://qpay.mn/q/logo/khanbank.png',
        link: `khanbank://q?qPay_QRcode=${encodeURIComponent(QR_TEXT)}`,
      },
      {
        name: 'Golomt Bank',
        description: 'Голомт банк',
        logo: 'https://qpay.mn/q/logo/golomtbank.png',
        link: `golomtbank://q?qPay_QRcode=${encodeURIComponent(QR_TEXT)}`,
      },
    ],
  },
};

export const paymentReplayed = { ...paymentCreated, message: 'idempotent' };

export const payment = { id: PAYMENT_ID, status: 'submitted', amount: 12000.5, invoiceId: INVOICE_ID, invoiceIds: [INVOICE_ID], partnerReference: PARTNER_REFERENCE };
export const paymentConfirmed = { ...payment, status: 'confirmed', paidAt: '2026-11-25T08:58:54.108Z' };

export const settlement = {
  financeDay: '2026-11-25',
  success: true,
  entries: [
    { refNum: 'MOF-T-1', paymentId: PAYMENT_ID, partnerReference: PARTNER_REFERENCE, amount: 12000.5, payerReg: '7000001', payerName: 'Тест ХХК', description: 'Төлбөр', date: '2026-11-25T08:58:54.108Z' },
  ],
};

export const summary = { total: 8, open: 6, overdue: 1, paid: 1, totalAmountDue: 107000.75 };

export const paymentList = {
  items: [
    { id: 'effc01f5-c646-4aff-a55f-816a01d58be2', refNum: 'MOF-T-REJECT', status: 'failed', amount: 10000, source: 'mof', partnerId: PARTNER_ID, partnerReference: null, createdAt: '2026-11-25T08:59:20.222Z' },
    { id: PAYMENT_ID, refNum: 'MOF-T-1', status: 'canceled', amount: 12000.5, source: 'mof', partnerId: PARTNER_ID, partnerReference: PARTNER_REFERENCE, createdAt: '2026-11-25T08:59:20.034Z' },
  ],
  total: 2,
  page: 1,
  limit: 2,
};

export const createWebhook = { url: 'https://hooks.example.com/gov', secret: 'whsec_0123456789abcdef', events: ['payment.submitted', 'payment.confirmed'] };
export const webhook = { id: WEBHOOK_ID, url: createWebhook.url, events: createWebhook.events, enabled: true, disabledReason: null, createdAt: '2026-11-25T08:58:54.531Z' };
export const disabledWebhook = { ...webhook, enabled: false, disabledReason: 'failing' };

export const deliveryList = {
  items: [
    {
      event: 'payment.confirmed',
      eventId: EVENT_ID,
      paymentId: PAYMENT_ID,
      deliveryId: DELIVERY_ID,
      status: 'pending',
      statusCode: null,
      durationMs: 0,
      error: null,
      attempt: 2,
      nextRetryAt: '2026-11-25T08:59:59.612Z',
      createdAt: '2026-11-25T08:59:59.612Z',
    },
    {
      event: 'payment.confirmed',
      eventId: EVENT_ID,
      paymentId: PAYMENT_ID,
      deliveryId: DELIVERY_ID,
      status: 'failed',
      statusCode: 500,
      durationMs: 41,
      error: 'HTTP 500',
      attempt: 1,
      nextRetryAt: '2026-11-25T08:59:59.612Z',
      createdAt: '2026-11-25T08:59:54.612Z',
    },
  ],
  nextCursor: null,
};

export const event = { id: EVENT_ID, type: 'payment.confirmed', createdAt: '2026-11-25T08:59:54.612Z', sequence: 48213, data: { id: PAYMENT_ID, amount: 12000.5, partnerReference: PARTNER_REFERENCE } };

export const eventList = {
  items: [event, { id: 'a0c2e1f4-5b6d-4e7f-8a9b-0c1d2e3f4a5b', type: 'payment.submitted', createdAt: '2026-11-25T08:58:54.108Z', sequence: 48190, data: { id: PAYMENT_ID, invoiceId: INVOICE_ID, partnerReference: PARTNER_REFERENCE } }],
  nextCursor: 'ZTE6OGM5M2M0MGMtMmMxNS00OTk3LWEwODQtZjg0ZDczMzg4OTJlOjQ4MTkw',
};

/** The feed a follower reads: oldest first after the highest sequence it has processed. */
export const eventFeed = { items: [eventList.items[1], event], nextCursor: null };

export const device = { id: '9dfe60ff-fe65-4612-82f4-1456e4423b64', platform: 'android', createdAt: '2026-11-25T08:58:54.625Z' };

/** The X-Request-Id the error examples carry: every error body repeats its answer's header. */
export const REQUEST_ID = '3f6c2a8e-5d1b-4c7a-9e0f-2b8d4a6c1e97';

const error = (statusCode: number, error: string, code: string, message: string) => ({ statusCode, message, error, code, requestId: REQUEST_ID });

/** A 400 refusing each `[path, message]`: one `message` entry and one `errors` entry per field. */
export const badRequest = (...fields: [path: string, message: string][]) => ({
  statusCode: 400,
  message: fields.map(([, message]) => message),
  error: 'Bad Request',
  code: 'invalid_request',
  requestId: REQUEST_ID,
  errors: fields.map(([path, message]) => ({ path, message })),
});

export const errors = {
  400: badRequest(['/extra', 'property extra should not exist'], ['/invoiceId', 'invoiceId must be a UUID']),
  401: error(401, 'Unauthorized', 'unauthenticated', 'Invalid or missing API key'),
  403: error(403, 'Forbidden', 'partner_inactive', 'Partner account is inactive'),
  404: error(404, 'Not Found', 'not_found', 'Payment not found'),
  409: error(409, 'Conflict', 'idempotency_key_in_use', 'A request with this idempotency key is still in progress'),
  413: error(413, 'Payload Too Large', 'payload_too_large', 'Request body is too large'),
  415: error(415, 'Unsupported Media Type', 'unsupported_media_type', 'Content-Type must be application/json'),
  422: error(422, 'Unprocessable Entity', 'idempotency_key_reuse', 'Idempotency key was already used with a different request'),
  429: error(429, 'Too Many Requests', 'rate_limited', 'Too Many Requests'),
  500: error(500, 'Internal Server Error', 'internal_error', 'Internal server error'),
  503: error(503, 'Service Unavailable', 'ministry_unavailable', 'Service temporarily unavailable, please retry later'),
};

/** A 404 naming what was not found, as the service words it. */
export const notFound = (what: string) => ({ ...errors[404], message: `${what} not found` });

/** A 409 in the error shape with its code. */
export const conflict = (code: string, message: string) => error(409, 'Conflict', code, message);

/** A 422 payment refusal: `{ success: false, refNum, message, code, requestId }`. */
export const refusal = (refNum: string, code: string, message: string) => ({ success: false, refNum, message, code, requestId: REQUEST_ID });

export const sandboxScenarios = {
  scenarios: SANDBOX_SCENARIOS.map((name) => ({ name, description: SCENARIO_DESCRIPTIONS[name] })),
};

export const sandboxInvoice = {
  id: INVOICE_ID,
  description: 'Sandbox: fail-after-submit',
  amount: 10000,
  status: 'open',
  dueDate: '2026-12-25T08:58:54.627Z',
  issuedAt: '2026-11-25T08:58:54.627Z',
  vehicleNo: null,
  payer: { register: 'SBX-52C8DC3E-9F2A61B04C', name: 'Sandbox payer' },
  payee: { id: 'GOV-MOF-01', name: 'Сангийн яам' },
};
