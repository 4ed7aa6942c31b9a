/**
 * The size DynamoDB bills an item at (Developer Guide, "Item sizes and formats"): attribute names
 * plus values; strings and binaries by their bytes; a number by its significant digits (1 byte per
 * two, plus 1); sets by their elements; lists and maps 3 bytes plus 1 byte per element.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

const numberSize = (n: string): number => {
  const digits = n.replace(/^[-+]/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
};

export const attributeValueSize = (v: AttributeValue): number => {
  if (v.S !== undefined) return Buffer.byteLength(v.S, 'utf8');
  if (v.N !== undefined) return numberSize(v.N);
  if (v.B !== undefined) return v.B.byteLength;
  if (v.SS !== undefined) return v.SS.reduce((sum, s) => sum + Buffer.byteLength(s, 'utf8'), 0);
  if (v.NS !== undefined) return v.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (v.BS !== undefined) return v.BS.reduce((sum, b) => sum + b.byteLength, 0);
  if (v.L !== undefined) return 3 + v.L.reduce((sum, e) => sum + attributeValueSize(e) + 1, 0);
  if (v.M !== undefined)
    return (
      3 + Object.entries(v.M).reduce((sum, [k, e]) => sum + Buffer.byteLength(k, 'utf8') + attributeValueSize(e) + 1, 0)
    );
  return 1; // NULL, BOOL
};

/** Bytes of a whole item in its wire (marshalled) form. */
export const itemSize = (item: Record<string, AttributeValue>): number =>
  Object.entries(item).reduce((sum, [name, v]) => sum + Buffer.byteLength(name, 'utf8') + attributeValueSize(v), 0);

/** Write capacity units of one standard write of an item this size (1 per started KB). */
export const writeUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));
