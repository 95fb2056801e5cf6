package main

import (
	"io"
	"io/fs"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/seckill/seckill/db/demo"
	"github.com/seckill/seckill/static"
)

// Every text answer (text/*, JavaScript, SVG) says charset=utf-8: each
// static file, each main page as its user, the error pages, the order CSV
// and Asynqmon's page and scripts; app.css's " ●" then reads as written.
func TestTextAnswersSayUTF8(t *testing.T) {
	a, pages := layoutFixture(t)
	tokens := map[string]string{}
	for user, pw := range layoutPasswords(a) {
		tokens[user] = a.login(user, pw)
	}
	type answer struct{ user, path string }
	var answers []answer
	if err := fs.WalkDir(static.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			answers = append(answers, answer{"", "/static/" + path})
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		answers = append(answers, answer(p))
	}
	admin := a.Config.AdminUsername
	answers = append(answers,
		answer{"", "/no-such-page"}, answer{"", "/admin"}, answer{"", "/healthz"}, answer{"", "/login"}, answer{"", "/register"},
		answer{demo.Merchant, "/api/admin/goods/1/orders.csv"},
		answer{admin, "/monitor/"}, answer{admin, "/monitor/queues"},
	)
	texts := 0
	check := func(who, path string) string {
		req, _ := http.NewRequest("GET", a.URL+path, nil)
		if who != "" {
			req.Header.Set("Authorization", "Bearer "+tokens[who])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		ct := res.Header.Get("Content-Type")
		mt, params, _ := mime.ParseMediaType(ct)
		if strings.HasPrefix(mt, "text/") || strings.Contains(mt, "javascript") || strings.HasSuffix(mt, "+xml") {
			texts++
			if !strings.EqualFold(params["charset"], "utf-8") {
				t.Errorf("%s (as %q): %d %q, want charset=utf-8", path, who, res.StatusCode, ct)
			}
		}
		return string(body)
	}
	for _, an := range answers {
		check(an.user, an.path)
	}
	// Asynqmon's own scripts, as its page names them.
	monitor := check(admin, "/monitor/")
	for _, part := range strings.Split(monitor, `src="`)[1:] {
		if src := part[:strings.IndexByte(part, '"')]; strings.HasPrefix(src, "/monitor/") {
			check(admin, src)
		}
	}
	if css := check("", "/static/app.css"); !strings.Contains(css, "●") {
		t.Errorf("app.css lost its ●")
	}
	if texts < 40 {
		t.Fatalf("only %d text answers checked", texts)
	}
}
