/** Web Crypto, where the runtime has it globally (browsers, Node 19+), else Node 18's
 * `node:crypto` webcrypto (its global `crypto` needs a flag there). */

// The specifier in a variable: bundlers for browsers leave this Node-only import alone.
const NODE_CRYPTO = "node:crypto";

export async function webCrypto(): Promise<Crypto> {
  if (globalThis.crypto?.subtle) return globalThis.crypto;
  const crypto: { webcrypto: Crypto } = await import(NODE_CRYPTO);
  return crypto.webcrypto;
}
