import { Type, type Static } from 'typebox';
import { StringEnum } from './common.schema.js';
import { PAYMENT_STATUSES } from '../domain/vocabulary.js';

/**
 * The QR landing page's path parameter. Deliberately any string: a malformed id is answered like
 * an unknown one (the 404 page), never with the API's 400 JSON.
 */
export const ShortLinkParams = Type.Object({ paymentId: Type.String() }, { additionalProperties: false });
export type ShortLinkParams = Static<typeof ShortLinkParams>;

/** The payment's status as the page shows it: a payment canceled because it expired reads `expired`. */
export const SHORT_LINK_STATUSES = [...PAYMENT_STATUSES, 'expired'] as const;
export type ShortLinkStatus = (typeof SHORT_LINK_STATUSES)[number];

/** `GET /q/{paymentId}/status`: the status only, never payer, partner or invoice data. */
export const ShortLinkStatusBody = Type.Object({ status: StringEnum(SHORT_LINK_STATUSES) }, { additionalProperties: false });
export type ShortLinkStatusBody = Static<typeof ShortLinkStatusBody>;
