/** The console's stylesheet. `[hidden]` wins over every display rule: a hidden part is never shown. */
export const CONSOLE_CSS = `
[hidden]{display:none!important}
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:10px 16px;display:flex;gap:12px;align-items:center}
header h1{font-size:16px;margin:0;flex:1}
main{display:grid;grid-template-columns:1fr 1fr;gap:12px;padding:12px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 12px;min-width:0}
section.wide{grid-column:1 / span 2}
h2{font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:#56607a;margin:0 0 8px}
h3{font-size:12px;color:#56607a;margin:10px 0 4px}
table{width:100%;border-collapse:collapse}td,th{text-align:left;padding:4px 6px;border-bottom:1px solid #eef0f3;font-size:13px;vertical-align:top;overflow-wrap:anywhere}
tr.sel{background:#eef4ff}tr[data-id]{cursor:pointer}
button{font:inherit;padding:3px 10px;border-radius:4px;border:1px solid #9aa3b5;background:#fff;cursor:pointer;margin:1px 2px}
button.ok{border-color:#2f8f4e;color:#2f8f4e}button.no{border-color:#b3362d;color:#b3362d}
.muted{color:#56607a;font-size:12px}.bad{color:#b3362d}.good{color:#2f8f4e}.warn{color:#a86b00}
.log{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px;max-height:320px;overflow:auto;background:#fafbfc;border:1px solid #eef0f3;padding:6px}
.msg{margin:0 0 6px}.msg b{color:#3461c1}.msg.user b{color:#2f8f4e}
#login{padding:40px;text-align:center}input{font:inherit;padding:4px 6px}
code.args{white-space:pre-wrap;word-break:break-all;font-size:12px;display:block;background:#fafbfc;padding:2px 4px}
select{font:inherit;padding:2px}ul.reasons{margin:2px 0;padding-left:18px;font-size:12px}
`;
