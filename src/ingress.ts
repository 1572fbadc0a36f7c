/** The ingress pipeline lives in src/ingress/; this file keeps the old import path. */
export * from './ingress/index.js';
