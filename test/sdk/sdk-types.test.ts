import type { Static } from 'typebox';
import { describe, expectTypeOf, it } from 'vitest';
import type * as Sdk from '../../sdk/src/types.js';
import type * as Vocabulary from '../../src/domain/vocabulary.js';
import type { InvoiceBody, InvoiceListBody } from '../../src/schemas/invoice.schema.js';
import type {
  CancelBody,
  PaymentBody,
  PaymentCreatedBody,
  PaymentFailedBody,
  PaymentListBody,
  QrPayBody,
  SettlementBody,
  SummaryBody,
} from '../../src/schemas/payment.schema.js';
import type {
  DeliveryListBody,
  RecoverQueuedBody,
  RedeliveryQueuedBody,
  SecretRotatedBody,
  WebhookBody,
  WebhookCreatedBody,
  WebhookDeletedBody,
  WebhookTestQueuedBody,
} from '../../src/schemas/webhook.schema.js';
import type { CaseBody, CaseCommentBody, CaseDetailBody, CaseListBody, CaseListQuery, CaseResolutionBody, OpenCaseBody } from '../../src/schemas/case.schema.js';
import type { DeviceBody } from '../../src/schemas/device.schema.js';
import type { EVENT_DATA, EventBody, EventListQuery } from '../../src/schemas/event.schema.js';
import type { CreateSandboxInvoiceBody, ScenarioListBody } from '../../src/schemas/sandbox.schema.js';
import type { ApprovedBody } from '../../src/http/routes/sandbox.routes.js';
import type { SandboxScenario } from '../../src/domain/sandbox-scenarios.js';

/*
 * The SDK is published on its own, so it cannot import the service's types; these checks hold
 * its hand-written types to the service's vocabulary and response schemas. They run in the type
 * checker (npm run typecheck): a drift on either side fails CI there.
 */
describe('SDK types', () => {
  it('use the service vocabulary', () => {
    expectTypeOf<Sdk.PaymentStatus>().toEqualTypeOf<Vocabulary.PaymentStatus>();
    expectTypeOf<Sdk.InvoiceStatus>().toEqualTypeOf<Vocabulary.InvoiceStatus>();
    expectTypeOf<Sdk.QrStandard>().toEqualTypeOf<Vocabulary.QrStandard>();
    expectTypeOf<Sdk.WebhookEventName>().toEqualTypeOf<Vocabulary.WebhookEvent>();
    expectTypeOf<Sdk.WebhookDeliveryEventName>().toEqualTypeOf<Vocabulary.DeliveredEvent>();
    expectTypeOf<Sdk.PaymentCancelReason>().toEqualTypeOf<Vocabulary.CancelReason>();
    expectTypeOf<keyof Sdk.PaymentEventData>().toEqualTypeOf<Vocabulary.WebhookEvent>();
    expectTypeOf<Sdk.DevicePlatform>().toEqualTypeOf<Vocabulary.Platform>();
    expectTypeOf<Sdk.WebhookDisabledReason>().toEqualTypeOf<Vocabulary.WebhookDisabledReason>();
    expectTypeOf<Sdk.WebhookDeliveryStatus>().toEqualTypeOf<Vocabulary.DeliveryLogStatus>();
    expectTypeOf<Sdk.SandboxScenarioName>().toEqualTypeOf<SandboxScenario>();
    expectTypeOf<Sdk.CaseType>().toEqualTypeOf<Vocabulary.CaseType>();
    expectTypeOf<Sdk.CaseStatus>().toEqualTypeOf<Vocabulary.CaseStatus>();
    expectTypeOf<Sdk.CaseOutcome>().toEqualTypeOf<Vocabulary.CaseOutcome>();
    expectTypeOf<Sdk.CaseResolver>().toEqualTypeOf<Vocabulary.CaseResolver>();
    expectTypeOf<Sdk.CaseCommentAuthor>().toEqualTypeOf<Vocabulary.CaseAuthor>();
    expectTypeOf<Sdk.CaseEventName>().toEqualTypeOf<Extract<Vocabulary.WebhookEvent, `case.${string}`>>();
  });

  it('send the case requests the schemas take', () => {
    expectTypeOf<Sdk.OpenCaseParams>().toEqualTypeOf<Static<typeof OpenCaseBody>>();
    expectTypeOf<Sdk.CaseListParams>().toEqualTypeOf<Static<typeof CaseListQuery>>();
  });

  it('read a case exactly as the case schemas give it', () => {
    expectTypeOf<Sdk.Case>().toEqualTypeOf<Static<typeof CaseBody>>();
    expectTypeOf<Sdk.CaseDetail>().toEqualTypeOf<Static<typeof CaseDetailBody>>();
    expectTypeOf<Sdk.CaseList>().toEqualTypeOf<Static<typeof CaseListBody>>();
    expectTypeOf<Sdk.CaseComment>().toEqualTypeOf<Static<typeof CaseCommentBody>>();
    expectTypeOf<Sdk.CaseResolution>().toEqualTypeOf<Static<typeof CaseResolutionBody>>();
  });

  it('send the sandbox request the schema takes', () => {
    expectTypeOf<Sdk.CreateSandboxInvoiceInput>().toEqualTypeOf<Static<typeof CreateSandboxInvoiceBody>>();
  });

  it('read every response the schemas allow', () => {
    expectTypeOf<Static<typeof InvoiceBody>>().toMatchTypeOf<Sdk.Invoice>();
    expectTypeOf<Static<typeof InvoiceListBody>>().toMatchTypeOf<Sdk.InvoiceList>();
    expectTypeOf<Static<typeof QrPayBody>>().toMatchTypeOf<Sdk.QrPay>();
    expectTypeOf<Static<typeof PaymentCreatedBody>>().toMatchTypeOf<Sdk.PaymentCreated>();
    // Every 201 carries the QR: a strict consumer reads payment.qrpay.qrText without a guard.
    expectTypeOf<Sdk.PaymentCreated['qrpay']>().toEqualTypeOf<Sdk.QrPay>();
    expectTypeOf<Static<typeof PaymentCreatedBody>['qrpay']>().not.toBeNullable();
    expectTypeOf<Static<typeof PaymentFailedBody>>().toMatchTypeOf<Sdk.PaymentFailedBody>();
    expectTypeOf<Static<typeof PaymentBody>>().toMatchTypeOf<Sdk.Payment>();
    expectTypeOf<Static<typeof CancelBody>>().toMatchTypeOf<Sdk.PaymentCanceled>();
    expectTypeOf<Static<typeof SettlementBody>>().toMatchTypeOf<Sdk.SettlementReport>();
    expectTypeOf<Static<typeof SummaryBody>>().toMatchTypeOf<Sdk.Summary>();
    expectTypeOf<Static<typeof PaymentListBody>>().toMatchTypeOf<Sdk.PaymentList>();
    expectTypeOf<Static<typeof WebhookBody>>().toMatchTypeOf<Sdk.Webhook>();
    expectTypeOf<Static<typeof WebhookCreatedBody>>().toMatchTypeOf<Sdk.WebhookCreated>();
    expectTypeOf<Static<typeof WebhookDeletedBody>>().toMatchTypeOf<Sdk.WebhookDeleted>();
    expectTypeOf<Static<typeof DeliveryListBody>>().toMatchTypeOf<Sdk.WebhookDeliveryList>();
    expectTypeOf<Static<typeof WebhookTestQueuedBody>>().toMatchTypeOf<Sdk.WebhookTestQueued>();
    expectTypeOf<Static<typeof RedeliveryQueuedBody>>().toMatchTypeOf<Sdk.WebhookRedeliveryQueued>();
    expectTypeOf<Static<typeof DeviceBody>>().toMatchTypeOf<Sdk.Device>();
    expectTypeOf<Static<typeof SecretRotatedBody>>().toMatchTypeOf<Sdk.WebhookSecretRotated>();
    expectTypeOf<Static<typeof RecoverQueuedBody>>().toMatchTypeOf<Sdk.WebhookRecoverQueued>();
    expectTypeOf<Static<typeof EventBody>['sequence']>().toEqualTypeOf<Sdk.PaymentEvent['sequence']>();
    expectTypeOf<Static<typeof EventListQuery>['afterSequence']>().toEqualTypeOf<Sdk.EventQuery['afterSequence']>();
    expectTypeOf<Static<typeof ScenarioListBody>>().toMatchTypeOf<Sdk.SandboxScenarioList>();
    expectTypeOf<Static<typeof ApprovedBody>>().toMatchTypeOf<Sdk.SandboxApproval>();
  });

  it("type each event's data as the event schemas do", () => {
    expectTypeOf<Static<(typeof EVENT_DATA)['payment.submitted']>>().toEqualTypeOf<Sdk.PaymentEventData['payment.submitted']>();
    expectTypeOf<Static<(typeof EVENT_DATA)['payment.confirmed']>>().toEqualTypeOf<Sdk.PaymentEventData['payment.confirmed']>();
    expectTypeOf<Static<(typeof EVENT_DATA)['payment.failed']>>().toEqualTypeOf<Sdk.PaymentEventData['payment.failed']>();
    expectTypeOf<Static<(typeof EVENT_DATA)['payment.canceled']>>().toEqualTypeOf<Sdk.PaymentEventData['payment.canceled']>();
    expectTypeOf<Extract<Sdk.WebhookMessage, { event: 'payment.canceled' }>['data']>().toEqualTypeOf<Sdk.PaymentEventData['payment.canceled']>();
    expectTypeOf<Static<(typeof EVENT_DATA)['case.opened']>>().toEqualTypeOf<Sdk.PaymentEventData['case.opened']>();
    expectTypeOf<Static<(typeof EVENT_DATA)['case.updated']>>().toEqualTypeOf<Sdk.PaymentEventData['case.updated']>();
    expectTypeOf<Static<(typeof EVENT_DATA)['case.resolved']>>().toEqualTypeOf<Sdk.PaymentEventData['case.resolved']>();
    expectTypeOf<Sdk.PaymentEventData['case.resolved']>().toEqualTypeOf<Sdk.CaseDetail>();
    expectTypeOf<Sdk.EventData>().toEqualTypeOf<Sdk.PaymentEventData>();
  });

  it('narrow a case event to the case by its name', () => {
    expectTypeOf<Extract<Sdk.PaymentEvent, { type: 'case.resolved' }>['data']>().toEqualTypeOf<Sdk.CaseDetail>();
    expectTypeOf<Extract<Sdk.WebhookMessage, { event: 'case.opened' }>['data']>().toEqualTypeOf<Sdk.CaseDetail>();
    expectTypeOf<Sdk.CaseEvent['data']>().toEqualTypeOf<Sdk.CaseDetail>();
    const resolutionOf = (event: Sdk.PaymentEvent) => (event.type === 'case.resolved' ? event.data.resolution : undefined);
    expectTypeOf(resolutionOf).returns.toEqualTypeOf<Sdk.CaseResolution | null | undefined>();
    const authorsOf = (message: Sdk.WebhookMessage) => (message.event === 'case.updated' ? message.data.comments.map((c) => c.author) : []);
    expectTypeOf(authorsOf).returns.toEqualTypeOf<Sdk.CaseCommentAuthor[]>();
  });
});
