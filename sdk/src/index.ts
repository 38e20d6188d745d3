export { createClient, parseRetryAfter, SDK_VERSION } from './client.js';
export type { ClientOptions, FetchLike, PaymentChannelClient } from './client.js';
export {
  ApiError,
  AuthenticationError,
  BadRequestError,
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
} from './errors.js';
export { verifyWebhook, parseWebhook, verifyWebhookRequest, parseWebhookRequest, standardSigningKey, WebhookVerificationError } from './webhook.js';
export type { WebhookHeaders, WebhookRequestOptions, WebhookSecrets } from './webhook.js';
export type * from './types.js';
