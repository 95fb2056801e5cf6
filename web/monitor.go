package web

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
)

// monitorBackBar is added to Asynqmon's page (whose UI cannot be edited):
// a fixed bar back to the merchant dashboard and the shop, styled inline
// because Asynqmon loads none of the shop's CSS (its CSP allows inline styles).
const monitorBackBar = `<nav data-testid="monitor-back-bar" style="position:fixed;right:16px;bottom:16px;z-index:2000;display:flex;gap:8px;font:600 14px system-ui,sans-serif">` +
	`<a href="/admin" data-testid="monitor-back" style="background:#c53030;color:#fff;padding:8px 14px;border-radius:20px;text-decoration:none;box-shadow:0 2px 6px rgba(0,0,0,.3)">&larr; <span class="monitor-long">Back to the shop&#39;s </span>dashboard</a>` +
	`<a href="/" data-testid="monitor-shop" style="background:#fff;color:#c53030;padding:8px 14px;border-radius:20px;text-decoration:none;box-shadow:0 2px 6px rgba(0,0,0,.3)">Shop</a></nav>`

// monitorNarrow starts Asynqmon with its sidebar folded on a phone, where
// the open one (220 px of a 390 px screen) leaves the queues no room: before
// Asynqmon's scripts run it sets the drawer closed in the settings Asynqmon
// keeps in localStorage (ui/src/localStorage.ts, "asynqmon:state"); its
// own toggle still opens it.
const monitorNarrow = `<script>(function(){try{if(innerWidth<720){var k="asynqmon:state",s=JSON.parse(localStorage.getItem(k)||"{}");` +
	`s.settings=Object.assign({},s.settings,{isDrawerOpen:false});localStorage.setItem(k,JSON.stringify(s));}}catch(e){}})();</script>`

// monitorPhone fits Asynqmon to a phone from outside its bundle: the bar
// back, which floats over the bottom of the page on a wide screen, sits in
// the empty end of Asynqmon's top bar as one short pill, covering nothing;
// and the dashboard's two charts, side by side too narrow to read, stack
// at the full width (MUI's grid classes are stable, unlike its jss ones).
const monitorPhone = `<style>@media (max-width:719px){` +
	`[data-testid=monitor-back-bar]{top:13px!important;bottom:auto!important;right:6px!important;font-size:12px!important}` +
	`[data-testid=monitor-back]{padding:8px 10px!important;line-height:16px;display:inline-block}` +
	`[data-testid=monitor-back-bar] .monitor-long,[data-testid=monitor-shop]{display:none}` +
	`.MuiGrid-item.MuiGrid-grid-xs-6{max-width:100%!important;flex-basis:100%!important}}</style>`

// withBackBar serves Asynqmon with monitorBackBar (and monitorNarrow, monitorPhone) at
// the top of its HTML page.
func withBackBar(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || strings.HasPrefix(r.URL.Path, MonitorPath+"/api/") {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		body := rec.body.Bytes()
		if rec.header.Get("Content-Type") == "" && len(body) > 0 {
			rec.header.Set("Content-Type", http.DetectContentType(body))
		}
		if strings.HasPrefix(rec.header.Get("Content-Type"), "text/html") {
			if i := bytes.Index(body, []byte("<body>")); i >= 0 {
				at := i + len("<body>")
				body = append(append(append([]byte{}, body[:at]...), monitorBackBar+monitorNarrow+monitorPhone...), body[at:]...)
				rec.header.Set("Content-Length", strconv.Itoa(len(body)))
			}
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		w.Write(body)
	})
}

// recorder keeps a handler's answer so it can be changed before it is sent.
type recorder struct {
	header http.Header
	body   bytes.Buffer
	status int
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}
