import { sql } from 'kysely';
import type { Db } from '../database.js';
import type { Platform } from '../../domain/vocabulary.js';

export interface DeviceUpsertResult {
  id: string;
  platform: Platform;
  created_at: Date;
  created: boolean;
}

export function createDeviceRepository(db: Db) {
  return {
    /** One row per (partner, user, token); a repeat keeps its id and may change the platform. */
    async upsert(input: { partnerId: string; userId: string; fcmToken: string; platform: Platform; at: Date }): Promise<DeviceUpsertResult> {
      const row = await db
        .insertInto('devices')
        .values({ partner_id: input.partnerId, user_id: input.userId, fcm_token: input.fcmToken, platform: input.platform })
        .onConflict((oc) => oc.columns(['partner_id', 'user_id', 'fcm_token']).doUpdateSet({ platform: input.platform, updated_at: input.at }))
        // xmax is 0 only on a row this statement inserted, which tells create from update.
        .returning(['id', 'platform', 'created_at', sql<boolean>`(xmax = 0)`.as('created')])
        .executeTakeFirstOrThrow();
      return row;
    },

  };
}

export type DeviceRepository = ReturnType<typeof createDeviceRepository>;
