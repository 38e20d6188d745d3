import type { Static } from 'typebox';
import type { DeviceBody } from '../schemas/device.schema.js';
import type { DeviceRepository } from '../db/repositories/device.repository.js';
import type { PushMessage, PushSender } from '../adapters/push-sender.js';
import type { Logger } from '../domain/logger.port.js';
import { systemClock, type Clock } from '../domain/clock.port.js';
import type { Platform } from '../domain/vocabulary.js';

type DeviceView = Static<typeof DeviceBody>;

export function createDeviceService(deps: { devices: DeviceRepository; push: PushSender; log: Logger; now?: Clock }) {
  const now = deps.now ?? systemClock;
  return {
    /** Upsert on (partner, userId, fcmToken); `created` tells a new device from a known one. */
    async register(partnerId: string, input: { userId: string; fcmToken: string; platform: Platform }): Promise<{ created: boolean; device: DeviceView }> {
      const row = await deps.devices.upsert({ partnerId, ...input, at: now() });
      return { created: row.created, device: { id: row.id, platform: row.platform, createdAt: row.created_at.toISOString() } };
    },

    /** Sends to every device of one end user; a failing token does not stop the others. */
    async notifyUser(partnerId: string, userId: string, message: PushMessage): Promise<{ sent: number; failed: number }> {
      const devices = await deps.devices.tokensOfUser(partnerId, userId);
      const results = await Promise.allSettled(devices.map((d) => deps.push.send(d.fcm_token, message)));
      const failed = results.filter((r) => r.status === 'rejected');
      for (const f of failed) deps.log.warn({ err: (f as PromiseRejectedResult).reason, partnerId }, 'push send failed');
      return { sent: results.length - failed.length, failed: failed.length };
    },
  };
}

export type DeviceService = ReturnType<typeof createDeviceService>;
