package scenarios

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// The crowd's client reads what a browser's reads bring back: a 304 with
// no body, a chunked body, a body up to the close, and the headers.
func TestBenchCrowdClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/etag":
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Cache-Control", "public, max-age=1")
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			fmt.Fprint(w, "fresh")
		case "/chunked":
			w.Header().Set("Set-Cookie", "a=b")
			w.Write([]byte("one,"))
			w.(http.Flusher).Flush()
			w.Write([]byte("two"))
		case "/close":
			w.Header().Set("Connection", "close")
			w.(http.Flusher).Flush()
			w.Write([]byte("to the end"))
		}
	}))
	defer srv.Close()
	c, err := newCrowdClient(srv.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		path, etag, body string
		status           int
		cookie           bool
	}{
		{"/etag", "", "fresh", 200, false},
		{"/etag", `"v1"`, "", 304, false},
		{"/chunked", "", "one,two", 200, true},
		{"/close", "", "to the end", 200, false},
		{"/etag", "", "fresh", 200, false}, // a new connection after the close
	} {
		var extra []string
		if tc.etag != "" {
			extra = append(extra, "If-None-Match: "+tc.etag)
		}
		a, err := c.do(0, "GET", tc.path, headBlock("10.0.0.1", "", extra...), true)
		if err != nil || a.status != tc.status || string(a.body) != tc.body || a.setCookie != tc.cookie {
			t.Errorf("%s (If-None-Match %s): %d %q cookie %v, %v", tc.path, tc.etag, a.status, a.body, a.setCookie, err)
		}
		if tc.path == "/etag" && (a.etag != `"v1"` || a.cacheControl != "public, max-age=1") {
			t.Errorf("%s: ETag %q, Cache-Control %q", tc.path, a.etag, a.cacheControl)
		}
	}
}

// A page's stylesheets and scripts are followed whatever their names, in
// either quoting and order of attributes; other sites' files, icons and
// inline scripts are not; live topics are read once each.
func TestBenchCrowdPageFiles(t *testing.T) {
	page := []byte(`<head><link rel="icon" href="/favicon.ico"/><link href='/static/app.3f2a9c.css' rel="stylesheet"/>
		<script id="i18n" type="application/json">{}</script><script src="/static/app.9e1b.js?v=1&amp;x=2" defer></script>
		<script src="https://cdn.example/x.js"></script><link rel="preload stylesheet" href="goods.css"></head>
		<section data-live-topic="goods:7"></section><div data-live-topic="slot:3"><p data-live-topic="goods:7"></p></div>`)
	got := pageFiles("127.0.0.1:8080", "/goods/7", page)
	want := []string{"/static/app.3f2a9c.css", "/static/app.9e1b.js?v=1&x=2", "/goods/goods.css"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	if got := liveTopics(page); !reflect.DeepEqual(got, []string{"goods:7", "slot:3"}) {
		t.Errorf("topics %q", got)
	}
}
