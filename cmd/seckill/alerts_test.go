package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// alertRules is the part of docs/ops/alerts.yml this test reads.
type alertRules struct {
	Groups []struct {
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// metricName matches the series names the rules may use: ours and the Go
// and process collectors'.
var metricName = regexp.MustCompile(`\b(?:seckill|go|process)_[a-zA-Z0-9_]*[a-zA-Z0-9]`)

// histogramSuffix lists what a histogram's or summary's name gains in the
// exposition beside its own name.
var histogramSuffix = []string{"_bucket", "_sum", "_count"}

// TestAlertMetrics checks that every metric an alerting rule or the Grafana
// dashboard (docs/ops/grafana-dashboard.json) reads is one a real server
// exposes, and that each rule's runbook names a section of docs/OPERATIONS.md.
func TestAlertMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../docs/ops/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("docs/ops/alerts.yml: %v", err)
	}

	a := startApp(t)
	token, _ := a.newUser()
	_, g := a.liveGoods(10, 1)
	a.grab(token, g.ID) // the route's labelled series exist
	exposed := scrapeNames(t, a)

	ops, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(ops), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			anchors[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}

	n := 0
	for _, gr := range rules.Groups {
		for _, r := range gr.Rules {
			n++
			for _, name := range metricName.FindAllString(r.Expr, -1) {
				if !exposed[name] {
					t.Errorf("alert %s reads %s, which the server does not expose", r.Alert, name)
				}
			}
			_, anchor, _ := strings.Cut(r.Annotations["runbook"], "docs/OPERATIONS.md#")
			if anchor == "" || !anchors[anchor] {
				t.Errorf("alert %s: runbook %q names no section of docs/OPERATIONS.md", r.Alert, r.Annotations["runbook"])
			}
		}
	}
	if n == 0 {
		t.Fatal("docs/ops/alerts.yml holds no rules")
	}

	// The dashboard: JSON, each panel titled with a query, each query on
	// series the server exposes.
	raw, err = os.ReadFile("../../docs/ops/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash grafanaDashboard
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("docs/ops/grafana-dashboard.json: %v", err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("docs/ops/grafana-dashboard.json holds no panels")
	}
	for i, p := range dash.Panels {
		if strings.TrimSpace(p.Title) == "" {
			t.Errorf("dashboard panel %d has no title", i+1)
		}
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no target", p.Title)
		}
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("dashboard panel %q: query %q reads no seckill metric", p.Title, tg.Expr)
			}
			for _, name := range names {
				if !exposed[name] {
					t.Errorf("dashboard panel %q reads %s, which the server does not expose", p.Title, name)
				}
			}
		}
	}
}

// grafanaDashboard is the part of docs/ops/grafana-dashboard.json this test reads.
type grafanaDashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// scrapeNames reads /metrics as the admin and returns the names it exposes,
// with a histogram's _bucket, _sum and _count series under its own name too.
func scrapeNames(t *testing.T, a *testApp) map[string]bool {
	t.Helper()
	req, _ := http.NewRequest("GET", a.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+a.adminToken())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("metrics: %d", res.StatusCode)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		names[name] = true
		for _, s := range histogramSuffix {
			if base, ok := strings.CutSuffix(name, s); ok {
				names[base] = true
			}
		}
	}
	return names
}
