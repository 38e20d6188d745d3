import type { CreatePartnerInput, PartnerService } from './partner.service.js';
import type { BackOfficeService } from './back-office.service.js';
import type { PartnerPatch, PartnerRow } from '../db/repositories/partner.repository.js';

/** What the audit log keeps of a partner: never a key. */
const auditable = (p: PartnerRow) => ({ name: p.name, qrStandard: p.qrStandard, environment: p.environment, active: p.active, rateLimits: p.rateLimits });

/** The operator's partner actions, each recorded in the audit log under the operator's name. */
export function createPartnerAdminService(deps: { partners: PartnerService; backOffice: Pick<BackOfficeService, 'audit'> }) {
  const { partners, backOffice } = deps;
  return {
    list: () => partners.list(),

    create: (input: CreatePartnerInput, operator: string) =>
      partners.create(input, (uow, created) => backOffice.audit(operator, 'partner.create', 'partner', created.id, null, auditable(created))(uow)),

    async update(id: string, patch: PartnerPatch, operator: string) {
      const before = await partners.get(id);
      return partners.update(id, patch, (uow, after) => backOffice.audit(operator, 'partner.update', 'partner', id, auditable(before), auditable(after))(uow));
    },

    async rotateKey(id: string, operator: string) {
      // The key itself never reaches the log: only that it was rotated and when the old ones stop.
      const before = await partners.get(id);
      return partners.rotateKey(id, (uow) => backOffice.audit(operator, 'partner.rotate_key', 'partner', id, null, { environment: before.environment })(uow));
    },
  };
}

export type PartnerAdminService = ReturnType<typeof createPartnerAdminService>;
