package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// stoppableRedis is a Redis the test may stop and start again on the same port:
// a redis-server process when one is installed, else an in-process miniredis.
type stoppableRedis struct {
	url   string
	stop  func()
	start func()
}

func newStoppableRedis(t *testing.T) *stoppableRedis {
	t.Helper()
	if bin, err := exec.LookPath("redis-server"); err == nil {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		var cmd *exec.Cmd
		r := &stoppableRedis{url: fmt.Sprintf("redis://127.0.0.1:%d", port)}
		r.start = func() {
			cmd = dieWithTest(exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "redis-server to listen", func() bool {
				c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
				if err == nil {
					c.Close()
				}
				return err == nil
			})
		}
		r.stop = func() { cmd.Process.Kill(); cmd.Wait() }
		r.start()
		t.Cleanup(r.stop)
		t.Log("readiness test uses its own redis-server on port", port)
		return r
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	t.Log("readiness test uses an in-process miniredis (no redis-server installed)")
	return &stoppableRedis{url: "redis://" + m.Addr(), stop: m.Close, start: func() {
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
	}}
}

func TestReadyzFollowsRedis(t *testing.T) {
	r := newStoppableRedis(t)
	a := startApp(t, func(c *Config) { c.RedisURL = r.url })
	if st, _ := get(t, a.URL+"/readyz"); st != 200 {
		t.Fatalf("readyz with Redis up: %d", st)
	}
	r.stop()
	eventually(t, 10*time.Second, "readyz to turn 503", func() bool { st, _ := get(t, a.URL+"/readyz"); return st == 503 })
	if st, _ := get(t, a.URL+"/healthz"); st != 200 {
		t.Fatalf("healthz must stay 200 while the process runs: %d", st)
	}
	r.start()
	eventually(t, 15*time.Second, "readyz to turn 200 again", func() bool { st, _ := get(t, a.URL+"/readyz"); return st == 200 })
}

func TestMetrics(t *testing.T) {
	a := startApp(t)
	a.newUser()
	a.call("GET", "/api/me", "", nil, nil)
	req, _ := http.NewRequest("GET", a.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+a.adminToken())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	st, body := res.StatusCode, string(raw)
	if st != 200 {
		t.Fatalf("metrics: %d", st)
	}
	for _, want := range []string{
		`seckill_http_requests_total{method="POST",route="/api/auth/register",status="201"} 1`,
		`seckill_http_requests_total{method="GET",route="/api/me",status="401"} 1`,
		`seckill_http_request_duration_seconds_bucket{method="POST",route="/api/auth/register"`,
		`seckill_websocket_connections 0`,
		`seckill_sql_statements_total `, // the sign-up's statements among them
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestPagesRender(t *testing.T) {
	a := startApp(t)
	for _, path := range []string{"/", "/login", "/register"} {
		if st, body := get(t, a.URL+path); st != 200 || !strings.Contains(body, "</html>") {
			t.Errorf("%s: %d", path, st)
		}
	}
	if st, body := get(t, a.URL+"/no-such-page"); st != 404 || !strings.Contains(body, `data-testid="error-page"`) {
		t.Errorf("unknown page: %d, want the friendly 404 page", st)
	}
	if st, _ := get(t, a.URL+"/static/app.css"); st != 200 {
		t.Errorf("static css: %d", st)
	}
}

// A configured ADMIN_PASSWORD is never printed; a generated one is, once, so the operator can log in.
func TestAnnounceShowsOnlyAGeneratedAdminPassword(t *testing.T) {
	announced := func(a *testApp) string {
		r, w, _ := os.Pipe()
		stdout := os.Stdout
		os.Stdout = w
		a.Announce()
		os.Stdout = stdout
		w.Close()
		out, _ := io.ReadAll(r)
		return string(out)
	}
	configured := startApp(t)
	if out := announced(configured); strings.Contains(out, testAdminPassword) || !strings.Contains(out, "configured ADMIN_PASSWORD") {
		t.Fatalf("configured password printed or not mentioned:\n%s", out)
	}
	generated := startApp(t, func(c *Config) { c.AdminPassword = "" })
	kept, err := os.ReadFile(filepath.Join(filepath.Dir(generated.Config.DBPath), "admin.password"))
	if err != nil {
		t.Fatal(err)
	}
	if out := announced(generated); !strings.Contains(out, strings.TrimSpace(string(kept))) {
		t.Fatalf("generated password not printed:\n%s", out)
	}
}
