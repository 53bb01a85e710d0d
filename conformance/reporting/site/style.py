"""The site's one stylesheet (style.css): system fonts only, nothing fetched."""

CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
a{color:#0969da}
header.top{background:#24292f;color:#fff;padding:12px 28px;display:flex;gap:22px;align-items:baseline;flex-wrap:wrap}
header.top b{font-size:17px}header.top a{color:#fff;text-decoration:none;opacity:.85}header.top a:hover{opacity:1}
main{padding:18px 28px 40px;max-width:1600px}
h1{font-size:22px;margin:6px 0 4px}h2{font-size:18px;margin:26px 0 8px}
.sub{color:#57606a;margin:0 0 14px}
.mono,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
h1.mono{font-size:20px}h3.mono{font-size:13px}
table.grid{border-collapse:separate;border-spacing:0;background:#fff;border:1px solid #d0d7de;border-radius:6px}
.grid th,.grid td{border-bottom:1px solid #eaeef2;border-right:1px solid #eaeef2;padding:6px 9px;vertical-align:top}
.grid thead th{background:#f6f8fa;font-weight:600;text-align:left;font-size:13px}
.grid th.proto{text-align:center;border-bottom:2px solid #d0d7de}
th.enc{text-align:left;font-weight:normal;min-width:260px;max-width:380px}
.enc .name{font-weight:600}.enc .ver{color:#57606a}
.tag{display:inline-block;font-size:11px;padding:0 6px;border-radius:10px;background:#eaeef2;color:#57606a;
 margin-left:4px}
.tag.mutant{background:#fff1e5;color:#953800}.tag.reference{background:#ddf4ff;color:#0969da}
.conf{color:#57606a;font-size:12px;max-width:360px}
td.cell{min-width:150px;padding:0}
td.cell a{display:block;padding:6px 9px;color:inherit;text-decoration:none;height:100%}
td.cell a:hover{filter:brightness(.96)}
.cell .big{font-size:15px;font-weight:700}.cell .line{font-size:12px}.cell .date{font-size:11px;opacity:.75}
.pass{background:#dafbe1;color:#116329}.fail{background:#ffebe9;color:#a40e26}.should{background:#fff8c5;color:#7d4e00}
.known{background:#ddf4ff;color:#0550ae}.error{background:#fbefff;color:#6639ba}.incomplete{background:#eaeef2;color:#57606a}
.none{background:#fff;color:#8c959f}
.legend span{display:inline-block;padding:2px 9px;margin:0 6px 6px 0;border-radius:4px;font-size:12px}
table.matrix{border-collapse:collapse;background:#fff;border:1px solid #d0d7de}
.matrix th,.matrix td{border:1px solid #eaeef2;padding:2px 5px}
.matrix thead th.run{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;white-space:nowrap;
 font-size:11px;font-weight:600;max-height:220px}
.matrix thead th.src{font-size:11px;font-weight:600;background:#f6f8fa;max-width:90px;overflow:hidden;
 text-overflow:ellipsis;white-space:nowrap}
.matrix th.check{text-align:left;font-weight:normal;white-space:nowrap}
.matrix td.o{text-align:center;width:22px;font-weight:700;font-size:12px}
.o.passed{background:#dafbe1;color:#1a7f37}.o.failed{background:#ffebe9;color:#cf222e}.o.errored{background:#fbefff;color:#8250df}
.o.known{background:#ddf4ff;color:#0969da}.o.quiet{background:#fff;color:#afb8c1}
.o.should{background:#fff8c5;color:#9a6700}
.lv{font-size:10px;color:#57606a;margin-left:4px}
section.finding{background:#fff;border:1px solid #d0d7de;border-left:4px solid #cf222e;border-radius:6px;
 padding:10px 14px;margin:12px 0}
section.finding.known{border-left-color:#0969da}section.finding.should{border-left-color:#bf8700}
section.finding.errored{border-left-color:#8250df}
section.finding h3{margin:0 0 4px;font-size:15px}
.clause{color:#57606a;font-size:12px}
pre{background:#f6f8fa;padding:6px 8px;border-radius:4px;overflow:auto;max-height:300px;margin:4px 0;font-size:12px}
.kv{display:grid;grid-template-columns:150px 1fr;gap:3px 10px;margin:6px 0;background:#fff;border:1px solid #d0d7de;
 border-radius:6px;padding:8px 12px}
.kv div:nth-child(odd){color:#57606a}
.kv div{overflow-wrap:anywhere}
details summary{cursor:pointer;color:#0969da}
.badges img{vertical-align:middle;margin-right:10px}
ul.plain{padding-left:18px}
"""
