/* Step 2, the other way in: a scenario invoice planted for this key (POST /sandbox/invoices), shown as a search result to pay. */
import type { InvoiceBody } from '../../schemas/invoice.schema.js';
import type { CreateSandboxInvoiceBody, ScenarioListBody } from '../../schemas/sandbox.schema.js';
import { byId, el, type ApiClient, type ErrorBox } from '../page-ui/page-ui.js';
import type { InvoiceList } from './sandbox-invoices.ui.js';

/** After the last keystroke in the key field, how long before the scenarios are read with it. */
const KEY_SETTLE_MS = 400;

interface Picker {
  api: ApiClient;
  errors: ErrorBox;
  invoices: InvoiceList;
  key: HTMLInputElement;
  select: HTMLSelectElement;
  /** The key the list on screen was read with: another key reads it again. */
  loadedWith: string | null;
  descriptions: Map<string, string>;
}

function describeSelected(picker: Picker): void {
  byId('scenario-desc').textContent = picker.descriptions.get(picker.select.value) ?? 'Enter your API key to list the scenarios.';
}

async function loadScenarios(picker: Picker): Promise<void> {
  const key = picker.key.value.trim();
  if (!key || key === picker.loadedWith) return;
  picker.loadedWith = key;
  try {
    const { data } = await picker.api.request<ScenarioListBody>('GET', '/sandbox/scenarios');
    const keep = picker.select.value;
    picker.descriptions = new Map(data.scenarios.map((s) => [s.name, s.description]));
    picker.select.replaceChildren(...data.scenarios.map((s) => el('option', { value: s.name, text: s.name })));
    if (picker.descriptions.has(keep)) picker.select.value = keep;
    picker.select.disabled = data.scenarios.length === 0;
  } catch (err) {
    // Read again on the next change of key or the next try to plant.
    picker.loadedWith = null;
    picker.errors.show(err, 'Scenarios');
  }
  describeSelected(picker);
}

/** The number typed, or nothing when left empty; the service says what it refuses (400). */
function optionalNumber(id: string): number | undefined {
  const raw = byId<HTMLInputElement>(id).value.trim();
  return raw === '' ? undefined : Number(raw);
}

function requestBody(picker: Picker): CreateSandboxInvoiceBody {
  const body: CreateSandboxInvoiceBody = { scenario: picker.select.value as CreateSandboxInvoiceBody['scenario'] };
  const amount = optionalNumber('scenario-amount');
  const delaySeconds = optionalNumber('scenario-delay');
  const durationSeconds = optionalNumber('scenario-duration');
  if (amount !== undefined) body.amount = amount;
  if (delaySeconds !== undefined) body.delaySeconds = delaySeconds;
  if (durationSeconds !== undefined) body.durationSeconds = durationSeconds;
  return body;
}

async function plant(picker: Picker): Promise<void> {
  const button = byId<HTMLButtonElement>('scenario-btn');
  button.disabled = true;
  try {
    const { data } = await picker.api.request<InvoiceBody>('POST', '/sandbox/invoices', { body: requestBody(picker) });
    picker.invoices.showPlanted(data);
    byId('scenario-planted').textContent = `Planted ${data.id} (${picker.select.value}, ${data.status}); it is selected in step 3.`;
  } catch (err) {
    picker.errors.show(err, 'Create invoice');
  } finally {
    button.disabled = false;
  }
}

export function createScenarioPicker(api: ApiClient, errors: ErrorBox, invoices: InvoiceList, key: HTMLInputElement): void {
  const picker: Picker = { api, errors, invoices, key, select: byId<HTMLSelectElement>('scenario'), loadedWith: null, descriptions: new Map() };
  let settle: ReturnType<typeof setTimeout> | undefined;
  key.addEventListener('input', () => {
    clearTimeout(settle);
    settle = setTimeout(() => void loadScenarios(picker), KEY_SETTLE_MS);
  });
  picker.select.addEventListener('change', () => describeSelected(picker));
  byId('scenario-form').addEventListener('submit', (e) => {
    e.preventDefault();
    errors.clear();
    if (!key.value.trim()) return errors.show(new Error('enter your API key first'), 'Create invoice');
    if (picker.loadedWith === null || picker.descriptions.size === 0) return void loadScenarios(picker);
    void plant(picker);
  });
  describeSelected(picker);
  void loadScenarios(picker);
}
