import type { CreatePartnerInput, PartnerService } from './partner.service.js';
import type { BackOfficeService } from './back-office.service.js';
import type { PartnerRow } from '../db/repositories/partner.repository.js';
import type { QrStandard } from '../domain/vocabulary.js';

/** What the audit log keeps of a partner: never a key. */
const auditable = (p: PartnerRow) => ({ name: p.name, qrStandard: p.qrStandard, environment: p.environment, active: p.active });

/** The operator's partner actions, each recorded in the audit log under the operator's name. */
export function createPartnerAdminService(deps: { partners: PartnerService; backOffice: Pick<BackOfficeService, 'audit'> }) {
  const { partners, backOffice } = deps;
  return {
    list: () => partners.list(),

    async create(input: CreatePartnerInput, operator: string) {
      const created = await partners.create(input);
      await backOffice.audit(operator, 'partner.create', 'partner', created.id, null, auditable(created));
      return created;
    },

    async update(id: string, patch: { active?: boolean; qrStandard?: QrStandard }, operator: string) {
      const before = await partners.get(id);
      const after = await partners.update(id, patch);
      await backOffice.audit(operator, 'partner.update', 'partner', id, auditable(before), auditable(after));
      return after;
    },

    async rotateKey(id: string, operator: string) {
      const rotated = await partners.rotateKey(id);
      await backOffice.audit(operator, 'partner.rotate_key', 'partner', id, null, { previousKeysExpireAt: rotated.previousKeysExpireAt.toISOString() });
      return rotated;
    },
  };
}

export type PartnerAdminService = ReturnType<typeof createPartnerAdminService>;
