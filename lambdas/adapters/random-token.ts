/** A fresh random token of letters and digits (issue 37: a generated Jupyter token). */
import { randomBytes } from 'node:crypto';
import { GENERATED_TOKEN_LENGTH, tokenFromBytes } from '../domain/access/order-access';

export const randomToken = (length: number = GENERATED_TOKEN_LENGTH): string =>
  tokenFromBytes(randomBytes(length), length);
