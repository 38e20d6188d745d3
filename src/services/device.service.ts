import type { Static } from 'typebox';
import type { DeviceBody } from '../schemas/device.schema.js';
import type { DeviceRepository } from '../db/repositories/device.repository.js';
import type { Clock } from '../domain/clock.port.js';
import type { Platform } from '../domain/vocabulary.js';

type DeviceView = Static<typeof DeviceBody>;

/** Devices of the partners' end users; pushes to them go out through the push delivery job. */
export function createDeviceService(deps: { devices: DeviceRepository; now: Clock }) {
  const { now } = deps;
  return {
    /** Upsert on (partner, userId, fcmToken); `created` tells a new device from a known one. */
    async register(partnerId: string, input: { userId: string; fcmToken: string; platform: Platform }): Promise<{ created: boolean; device: DeviceView }> {
      const row = await deps.devices.upsert({ partnerId, ...input, at: now() });
      return { created: row.created, device: { id: row.id, platform: row.platform, createdAt: row.created_at.toISOString() } };
    },
  };
}

export type DeviceService = ReturnType<typeof createDeviceService>;
