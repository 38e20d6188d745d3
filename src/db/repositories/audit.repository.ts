import { sql, type Selectable } from 'kysely';
import type { Db } from '../database.js';
import type { AuditLogTable } from '../db.types.js';
import { executorOf, type UnitOfWork } from '../unit-of-work.js';
import type { AuditAction } from '../../domain/vocabulary.js';

export type AuditRow = Selectable<AuditLogTable>;

export interface AuditEntry {
  operator: string;
  action: AuditAction;
  targetType: string;
  targetId: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  at: Date;
}

const auditColumns = ['id', 'operator', 'action', 'target_type', 'target_id', 'before', 'after', 'created_at'] as const;

const json = (value: Record<string, unknown> | null) => (value === null ? 'null' : JSON.stringify(value));

/** `reads`: where the log is listed from (the replica's routed reads, or the database itself). */
export function createAuditRepository(db: Db, reads: Db = db) {
  return {
    /** In the caller's transaction when it gives one: the action and its entry commit together. */
    async record(entry: AuditEntry, uow?: UnitOfWork): Promise<void> {
      await executorOf(db, uow)
        .insertInto('audit_log')
        .values({
          operator: entry.operator,
          action: entry.action,
          target_type: entry.targetType,
          target_id: entry.targetId,
          before: json(entry.before),
          after: json(entry.after),
          created_at: entry.at,
        })
        .execute();
    },

    /** Newest first, from before the cursor (an entry id) on. */
    async list(filter: { operator?: string; action?: string; targetId?: string }, beforeId: string | null, limit: number): Promise<AuditRow[]> {
      let query = reads.selectFrom('audit_log').select(auditColumns).orderBy('id', 'desc').limit(limit);
      if (filter.operator) query = query.where('operator', '=', filter.operator);
      if (filter.action) query = query.where('action', '=', filter.action as AuditAction);
      if (filter.targetId) query = query.where('target_id', '=', filter.targetId);
      if (beforeId) query = query.where(sql<boolean>`id < ${beforeId}::bigint`);
      return query.execute();
    },
  };
}

export type AuditRepository = ReturnType<typeof createAuditRepository>;
