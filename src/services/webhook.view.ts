import type { Static } from 'typebox';
import { camelRow, isoDates } from '../db/rows/row.mapper.js';
import type { WebhookRow } from '../db/repositories/webhook.repository.js';
import type { DeliveryLogEntry } from '../db/repositories/delivery-log.repository.js';
import type { DeliveryListBody, WebhookBody } from '../schemas/webhook.schema.js';

export type WebhookView = Static<typeof WebhookBody>;
type DeliveryItem = Static<typeof DeliveryListBody>['items'][number];

const webhookRow = camelRow(['id', 'url', 'events', 'disabled_reason', 'created_at']);

const logEntryRow = camelRow(['event', 'event_id', 'payment_id', 'delivery_id', 'status', 'status_code', 'duration_ms', 'error', 'attempt', 'next_retry_at']);

export function webhookView(row: WebhookRow): WebhookView {
  const { disabledReason, ...view } = isoDates(webhookRow(row));
  return { ...view, enabled: disabledReason === null, disabledReason };
}

/** One entry of a webhook's delivery log; the entry's time is when the attempt was made, or is due. */
export function deliveryLogItem(entry: DeliveryLogEntry): DeliveryItem {
  return { ...isoDates(logEntryRow(entry)), createdAt: entry.at.toISOString() };
}
