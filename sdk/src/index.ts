export { createClient, parseRetryAfter, SDK_VERSION } from './client.js';
export type { ClientOptions, FetchLike, PaymentChannelClient } from './client.js';
export {
  ApiError,
  AuthenticationError,
  BadRequestError,
  CaseAlreadyOpenError,
  ConflictError,
  ForbiddenError,
  NetworkError,
  NotFoundError,
  PaymentFailedError,
  RateLimitError,
  RedirectError,
  ResponseTooLargeError,
  ServerError,
  UnprocessableEntityError,
  ERROR_CODES,
} from './errors.js';
export type { ErrorCode, FieldError, PaymentRefusalCode } from './errors.js';
// The webhook verifier on Web Crypto (async; runs in Node, Deno, Bun and Workers alike, also alone as `@gov-payment-channel/sdk/webhook`)...
export { verifyWebhookAsync, parseWebhookAsync, verifyWebhookRequestAsync, parseWebhookRequestAsync, WebhookVerificationError } from './webhook.js';
export type { WebhookBody, WebhookHeaders, WebhookRequestOptions, WebhookSecrets } from './webhook.js';
// ...and the synchronous one of earlier versions, on node:crypto, kept for the code that calls it.
export { verifyWebhook, parseWebhook, verifyWebhookRequest, parseWebhookRequest, standardSigningKey } from './webhook-node.js';
export type * from './types.js';
