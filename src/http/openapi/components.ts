import { BadRequestBody, ErrorBody } from '../../schemas/common.schema.js';
import { DeviceBody, RegisterDeviceBody } from '../../schemas/device.schema.js';
import { EventBody, EventListBody } from '../../schemas/event.schema.js';
import { CaseBody, CaseCommentBody, CaseCommentRequest, CaseConflictBody, CaseDetailBody, CaseListBody, OpenCaseBody } from '../../schemas/case.schema.js';
import { InvoiceBody, InvoiceListBody } from '../../schemas/invoice.schema.js';
import {
  CancelBody,
  CreatePaymentBody,
  PaymentBody,
  PaymentCreatedBody,
  PaymentFailedBody,
  PaymentListBody,
  PaymentStatus,
  QrPayBody,
  SettlementBody,
  SettlementRequestBody,
  SummaryBody,
} from '../../schemas/payment.schema.js';
import {
  CreateWebhookBody,
  DeliveryListBody,
  RecoverBody,
  RecoverQueuedBody,
  RedeliveryQueuedBody,
  RotateSecretBody,
  SecretRotatedBody,
  UpdateWebhookBody,
  WebhookBody,
  WebhookCreatedBody,
  WebhookDeletedBody,
  WebhookLimitBody,
  WebhookListBody,
  WebhookTestQueuedBody,
} from '../../schemas/webhook.schema.js';
import { Live, NotReady, Ready } from '../routes/health.routes.js';
import { ApproveBody, ApprovedBody } from '../routes/sandbox.routes.js';
import { CreateSandboxInvoiceBody, ScenarioListBody } from '../../schemas/sandbox.schema.js';

/**
 * The names of the OpenAPI document's component schemas, keyed by the very schema objects the
 * routes use. The document only: the routes keep their inline schemas, so request validation and
 * response serialization never see a `$id` or a `$ref` (a shared `$id` would reach the custom
 * validator compiler and fast-json-stringify); the OpenAPI plugin swaps each of these objects,
 * wherever it occurs in a route's body or response schema, for a `$ref` to its component.
 */
export const NAMED_SCHEMAS: ReadonlyArray<readonly [name: string, schema: object]> = [
  ['Error', ErrorBody],
  ['ValidationError', BadRequestBody],
  ['Invoice', InvoiceBody],
  ['InvoiceList', InvoiceListBody],
  ['PaymentStatus', PaymentStatus],
  ['CreatePaymentRequest', CreatePaymentBody],
  ['QrPay', QrPayBody],
  ['PaymentCreated', PaymentCreatedBody],
  ['PaymentFailed', PaymentFailedBody],
  ['Payment', PaymentBody],
  ['PaymentCanceled', CancelBody],
  ['SettlementRequest', SettlementRequestBody],
  ['Settlement', SettlementBody],
  ['Summary', SummaryBody],
  ['PaymentList', PaymentListBody],
  ['CreateWebhookRequest', CreateWebhookBody],
  ['Webhook', WebhookBody],
  ['WebhookCreated', WebhookCreatedBody],
  ['WebhookLimitError', WebhookLimitBody],
  ['WebhookList', WebhookListBody],
  ['WebhookDeleted', WebhookDeletedBody],
  ['UpdateWebhookRequest', UpdateWebhookBody],
  ['RotateSecretRequest', RotateSecretBody],
  ['SecretRotated', SecretRotatedBody],
  ['RecoverRequest', RecoverBody],
  ['RecoverQueued', RecoverQueuedBody],
  ['DeliveryList', DeliveryListBody],
  ['WebhookTestQueued', WebhookTestQueuedBody],
  ['RedeliveryQueued', RedeliveryQueuedBody],
  ['Event', EventBody],
  ['EventList', EventListBody],
  ['OpenCaseRequest', OpenCaseBody],
  ['Case', CaseBody],
  ['CaseComment', CaseCommentBody],
  ['CaseDetail', CaseDetailBody],
  ['CaseList', CaseListBody],
  ['CaseCommentRequest', CaseCommentRequest],
  ['CaseConflict', CaseConflictBody],
  ['RegisterDeviceRequest', RegisterDeviceBody],
  ['Device', DeviceBody],
  ['SandboxApproveRequest', ApproveBody],
  ['SandboxApproved', ApprovedBody],
  ['SandboxScenarioList', ScenarioListBody],
  ['SandboxInvoiceRequest', CreateSandboxInvoiceBody],
  ['Liveness', Live],
  ['Readiness', Ready],
  ['NotReady', NotReady],
];

const REF_PREFIX = '#/components/schemas/';
const nameOf = new Map<object, string>(NAMED_SCHEMAS.map(([name, schema]) => [schema, name]));
/** By content too: `Type.Optional(QrPayBody)` is a copy of QrPayBody, not QrPayBody itself. */
const nameOfJson = new Map<string, string>(NAMED_SCHEMAS.map(([name, schema]) => [JSON.stringify(schema), name]));

/**
 * A plain copy of `schema` (own enumerable keys only) in which every named schema it contains is a
 * `$ref` to its component; `self` is kept whole (the component's own definition).
 */
export function withComponentRefs(schema: unknown, self?: object): unknown {
  if (Array.isArray(schema)) return schema.map((item) => withComponentRefs(item));
  if (schema === null || typeof schema !== 'object') return schema;
  const name = schema === self ? undefined : (nameOf.get(schema) ?? nameOfJson.get(JSON.stringify(schema)));
  if (name) return { $ref: REF_PREFIX + name };
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, withComponentRefs(value)]));
}

/**
 * The components in the error shape whose `code` is the whole closed list (the `Error` component's
 * field): each error response naming one narrows its `code` to the codes of its own status.
 */
export const ERROR_SHAPED_REFS: ReadonlySet<string> = new Set(
  NAMED_SCHEMAS.filter(([, schema]) => (schema as { properties?: { code?: unknown } }).properties?.code === ErrorBody.properties.code).map(([name]) => REF_PREFIX + name),
);

/** components.schemas: each named schema, referring to the others by `$ref`. */
export function componentSchemas(): Record<string, unknown> {
  return Object.fromEntries(NAMED_SCHEMAS.map(([name, schema]) => [name, withComponentRefs(schema, schema)]));
}
