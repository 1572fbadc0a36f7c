import { CONSOLE_BODY } from './page/body.js';
import { CONSOLE_SCRIPT } from './page/script.js';
import { CONSOLE_CSS } from './page/style.js';

/** The operator console: one self-contained page (no build step, no external assets). */
export const CONSOLE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchboard console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${CONSOLE_CSS}</style></head>
<body>${CONSOLE_BODY}<script>${CONSOLE_SCRIPT}</script></body></html>`;
