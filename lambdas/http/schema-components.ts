/**
 * zod schemas → OpenAPI components for the document (openapi-document.ts), and the JSON content helper.
 */
import * as z from 'zod/mini';

export type JsonObject = Record<string, unknown>;

// ---- schema conversion -------------------------------------------------------------------------

/**
 * Collects component schemas. zod emits schemas that carry a `meta({ id })` as `$defs` with
 * `#/$defs/<id>` references, which inside an OpenAPI document would resolve against the document
 * root; they are hoisted into `components.schemas` and the references rewritten.
 */
export class SchemaComponents {
  public readonly schemas: Record<string, JsonObject> = {};
  private readonly raw = new Map<string, string>();

  /** Converts a zod schema; named ones become a component and come back as a `$ref`. */
  public convert(schema: z.core.$ZodType, io: 'input' | 'output', name?: string): JsonObject {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io }) as JsonObject;
    const { $schema: _dialect, $defs, ...root } = json;
    const renames = new Map<string, string>();
    for (const [id, def] of Object.entries(($defs ?? {}) as Record<string, JsonObject>)) {
      renames.set(id, this.nameFor(id, def, io));
    }
    for (const [id, def] of Object.entries(($defs ?? {}) as Record<string, JsonObject>)) {
      this.schemas[renames.get(id) as string] = rewriteRefs(def, renames) as JsonObject;
    }
    const converted = rewriteRefs(root, renames) as JsonObject;
    if (!name || isRefOnly(converted)) return converted;
    const finalName = this.nameFor(name, root, io);
    this.schemas[finalName] = converted;
    return ref(finalName);
  }

  /** The component name for `name`: reused when the content is the same, suffixed when input and output differ. */
  private nameFor(name: string, content: JsonObject, io: 'input' | 'output'): string {
    const text = JSON.stringify(content);
    for (const candidate of [name, `${name}${io === 'input' ? 'Input' : 'Output'}`]) {
      const known = this.raw.get(candidate);
      if (known === undefined) {
        this.raw.set(candidate, text);
        return candidate;
      }
      if (known === text) return candidate;
    }
    throw new Error(`openapi: two different schemas are both named ${name}`);
  }
}

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });
const isRefOnly = (schema: JsonObject): boolean => Object.keys(schema).length === 1 && typeof schema.$ref === 'string';

const rewriteRefs = (value: unknown, renames: ReadonlyMap<string, string>): unknown => {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, renames));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => {
      if (key === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')) {
        const id = v.slice('#/$defs/'.length);
        return [key, `#/components/schemas/${renames.get(id) ?? id}`];
      }
      return [key, rewriteRefs(v, renames)];
    }),
  );
};

export const json = (schema: JsonObject, example?: unknown): JsonObject => ({
  'application/json': { schema, ...(example !== undefined ? { example } : {}) },
});
