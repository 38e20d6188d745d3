import type { Db } from '../database.js';
import type { PartnersTable } from '../db.types.js';
import type { KeyEnvironment, QrStandard } from '../../domain/vocabulary.js';
import type { Clock } from '../../domain/clock.port.js';
import { asUnitOfWork, type AlsoInTransaction } from '../unit-of-work.js';
import { camelRow } from '../rows/row.mapper.js';

export interface PartnerRow {
  id: string;
  name: string;
  qrStandard: QrStandard;
  environment: KeyEnvironment;
  active: boolean;
  /** The partner's own limits, or null when it uses the configured defaults. */
  rateLimits: PartnerRateLimits | null;
  createdAt: Date;
}

/** Requests per API key allowed in any second, minute and hour. */
export interface PartnerRateLimits {
  perSecond: number;
  perMinute: number;
  perHour: number;
}

/** What a partner update may change; `rateLimits: null` goes back to the defaults. */
export interface PartnerPatch {
  active?: boolean;
  qrStandard?: QrStandard;
  rateLimits?: PartnerRateLimits | null;
}

export interface KeyLookupRow {
  keyHash: string;
  keyEnvironment: KeyEnvironment;
  expiresAt: Date | null;
  partner: PartnerRow;
}

const partnerColumns = [
  'id',
  'name',
  'qr_standard',
  'environment',
  'active',
  'created_at',
  'rate_limit_per_second',
  'rate_limit_per_minute',
  'rate_limit_per_hour',
] as const;

type PartnerSelect = Pick<PartnersTable, 'name' | 'qr_standard' | 'environment' | 'active' | 'rate_limit_per_second' | 'rate_limit_per_minute' | 'rate_limit_per_hour'> & {
  id: string;
  created_at: Date;
};

const partnerFields = camelRow(['id', 'name', 'qr_standard', 'environment', 'active'] as const);

function toPartner(row: PartnerSelect): PartnerRow {
  const perSecond = row.rate_limit_per_second;
  const perMinute = row.rate_limit_per_minute;
  const perHour = row.rate_limit_per_hour;
  // The table's check keeps the three set together; a half-set row could only come from outside it.
  const rateLimits = perSecond !== null && perMinute !== null && perHour !== null ? { perSecond, perMinute, perHour } : null;
  return { ...partnerFields(row), rateLimits, createdAt: row.created_at };
}

/** The columns a patch's rate limits are written to: all three, null together for the defaults. */
function rateLimitColumns(limits: PartnerRateLimits | null) {
  return {
    rate_limit_per_second: limits?.perSecond ?? null,
    rate_limit_per_minute: limits?.perMinute ?? null,
    rate_limit_per_hour: limits?.perHour ?? null,
  };
}

export function createPartnerRepository(db: Db, now: Clock) {
  return {
    // A partner and its first key, its settings, and a new key beside the old ones: each in one transaction with `also`.

    async create(
      input: { name: string; qrStandard: QrStandard; environment: KeyEnvironment; active: boolean },
      key: { hash: string; prefix: string },
      also?: AlsoInTransaction<PartnerRow>,
    ): Promise<PartnerRow> {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .insertInto('partners')
          .values({ name: input.name, qr_standard: input.qrStandard, environment: input.environment, active: input.active })
          .returning(partnerColumns)
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('api_keys')
          .values({ partner_id: row.id, key_hash: key.hash, key_prefix: key.prefix, environment: input.environment })
          .execute();
        const partner = toPartner(row);
        await also?.(asUnitOfWork(trx), partner);
        return partner;
      });
    },

    async update(id: string, patch: PartnerPatch, also?: AlsoInTransaction<PartnerRow>): Promise<PartnerRow | null> {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .updateTable('partners')
          .set({
            ...(patch.active !== undefined ? { active: patch.active } : {}),
            ...(patch.qrStandard !== undefined ? { qr_standard: patch.qrStandard } : {}),
            ...(patch.rateLimits !== undefined ? rateLimitColumns(patch.rateLimits) : {}),
            updated_at: now(),
          })
          .where('id', '=', id)
          .returning(partnerColumns)
          .executeTakeFirst();
        if (!row) return null;
        const partner = toPartner(row);
        await also?.(asUnitOfWork(trx), partner);
        return partner;
      });
    },

    /** Adds a new key and puts an expiry on the partner's current keys, in one transaction. */
    async rotateKey(
      partnerId: string,
      environment: KeyEnvironment,
      key: { hash: string; prefix: string },
      oldKeysExpireAt: Date,
      also?: AlsoInTransaction<string>,
    ): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx
          .updateTable('api_keys')
          .set({ expires_at: oldKeysExpireAt })
          .where('partner_id', '=', partnerId)
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', oldKeysExpireAt)]))
          .execute();
        await trx
          .insertInto('api_keys')
          .values({ partner_id: partnerId, key_hash: key.hash, key_prefix: key.prefix, environment })
          .execute();
        await also?.(asUnitOfWork(trx), partnerId);
      });
    },

    // The partners as operators list them, and a key's partner as authentication finds it.

    async list(): Promise<PartnerRow[]> {
      const rows = await db.selectFrom('partners').select(partnerColumns).orderBy('created_at').orderBy('id').execute();
      return rows.map(toPartner);
    },

    async count(): Promise<number> {
      const row = await db.selectFrom('partners').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      return Number(row.n);
    },

    async findById(id: string): Promise<PartnerRow | null> {
      const row = await db.selectFrom('partners').select(partnerColumns).where('id', '=', id).executeTakeFirst();
      return row ? toPartner(row) : null;
    },

    async findByKeyHash(hash: string): Promise<KeyLookupRow | null> {
      const row = await db
        .selectFrom('api_keys as k')
        .innerJoin('partners as p', 'p.id', 'k.partner_id')
        .select(['k.key_hash', 'k.environment as key_environment', 'k.expires_at'])
        .select(['p.id', 'p.name', 'p.qr_standard', 'p.environment', 'p.active', 'p.created_at'])
        .select(['p.rate_limit_per_second', 'p.rate_limit_per_minute', 'p.rate_limit_per_hour'])
        .where('k.key_hash', '=', hash)
        .executeTakeFirst();
      if (!row) return null;
      return {
        keyHash: row.key_hash,
        keyEnvironment: row.key_environment,
        expiresAt: row.expires_at,
        partner: toPartner(row),
      };
    },
  };
}

export type PartnerRepository = ReturnType<typeof createPartnerRepository>;
