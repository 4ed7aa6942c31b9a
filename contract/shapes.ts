/** Value shapes both sides validate (zod/mini; types from `z.infer`). */
import * as z from 'zod/mini';

export const PortProtocolSchema = z.enum(['tcp', 'http']);
/** Container ports to expose: port number → protocol, e.g. `{"22":"tcp","8888":"http"}`. */
export const PortsSchema = z.record(
  z.string().check(z.regex(/^\d{1,5}$/, 'port must be a number')),
  PortProtocolSchema,
);
export type Ports = z.infer<typeof PortsSchema>;
