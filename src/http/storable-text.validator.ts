import type { ErrorObject } from 'ajv';

/**
 * PostgreSQL's text types cannot hold U+0000, and a lone UTF-16 surrogate has no UTF-8 form (the
 * driver would silently store U+FFFD instead), so either must be refused before any query.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const isUnstorable = (text: string) => text.includes('\u0000') || LONE_SURROGATE.test(text);

const UNSTORABLE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired UTF-16 surrogates';

const pointerSegment = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * JSON pointers of every string value or property name PostgreSQL could not store, except under
 * the `skip` paths. Iterative, so a body of thousands of nested arrays (well inside the body
 * limit) cannot overflow the stack.
 */
export function findUnstorableText(data: unknown, skip: ReadonlySet<string> = new Set()): string[] {
  const found: string[] = [];
  const pending: Array<{ value: unknown; path: string }> = [{ value: data, path: '' }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, path } = next;
    if (skip.has(path)) continue;
    if (typeof value === 'string') {
      if (isUnstorable(value)) found.push(path);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push({ value: value[i], path: `${path}/${i}` });
    } else if (typeof value === 'object' && value !== null) {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        const childPath = `${path}/${pointerSegment(key)}`;
        if (skip.has(childPath)) continue;
        if (isUnstorable(key)) found.push(childPath);
        else pending.push({ value: child, path: childPath });
      }
    }
  }
  return found;
}

function violation(instancePath: string): ErrorObject {
  return { keyword: 'storableText', instancePath, schemaPath: '#', params: {}, message: UNSTORABLE_TEXT_MESSAGE };
}

/**
 * The value an error refuses as a whole, if it does: its content is then moot. An unknown property
 * is reported at its parent; `required` and the like fault the parent but not its other fields.
 */
function refusedPath(err: ErrorObject): string | null {
  if (err.keyword === 'additionalProperties') {
    const extra: unknown = err.params.additionalProperty;
    return typeof extra === 'string' ? `${err.instancePath}/${pointerSegment(extra)}` : null;
  }
  return WHOLE_VALUE_KEYWORDS.has(err.keyword) ? err.instancePath : null;
}
const WHOLE_VALUE_KEYWORDS = new Set(['type', 'enum', 'const', 'format', 'pattern', 'minLength', 'maxLength']);

type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };
type CheckedValidate = ((data: unknown) => boolean) & { errors: ErrorObject[] | null };

/**
 * Wraps a compiled schema so every request part it checks also refuses unstorable text, whatever
 * the schema declares. A value the schema already refuses is reported once, by the schema.
 */
export function refuseUnstorableText(validate: Validate): CheckedValidate {
  const check: CheckedValidate = Object.assign((data: unknown): boolean => {
    const valid = validate(data);
    const schemaErrors = valid ? [] : (validate.errors ?? []);
    const refused = new Set(schemaErrors.map(refusedPath).filter((p): p is string => p !== null));
    const unstorable = findUnstorableText(data, refused);
    if (unstorable.length === 0) {
      check.errors = valid ? null : schemaErrors;
      return valid;
    }
    check.errors = [...schemaErrors, ...unstorable.map(violation)];
    return false;
  }, { errors: null });
  return check;
}
