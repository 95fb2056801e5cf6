package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Check is one invariant verified after a run.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Ratio compares two results' throughput.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Report is everything one bench run found.
type Report struct {
	StartedAt time.Time         `json:"started_at"`
	Machine   string            `json:"machine"`
	Target    string            `json:"target"`
	Settings  map[string]string `json:"settings"`
	Results   []Result          `json:"results"`
	Ratios    []Ratio           `json:"ratios"`
	Extra     map[string]string `json:"extra"` // e.g. WebSocket lag and memory
	Targets   []Target          `json:"targets,omitempty"`
	Tables    []Table           `json:"tables,omitempty"` // scenario tables of their own (the fair sale)
	Checks    []Check           `json:"checks"`
}

// Target is a performance goal and what the run measured against it. A
// target not met is reported, not a failed run: only invariants fail it.
type Target struct {
	Name     string `json:"name"`
	Measured string `json:"measured"`
	Goal     string `json:"goal"`
	Met      bool   `json:"met"`
}

// Table is a scenario's own table in the report: a title, a header and rows of cells.
type Table struct {
	Title  string     `json:"title"`
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
	Notes  []string   `json:"notes,omitempty"` // lines printed under the table
}

// Markdown renders the table.
func (t Table) Markdown() string {
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "%s\n\n", t.Title)
	}
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
	for range t.Header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range t.Rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	for _, n := range t.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	return b.String()
}

// Machine describes the machine the run is on.
func Machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				model = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs %s, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.Version())
}

// Failed reports whether any invariant was violated.
func (r *Report) Failed() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return true
		}
	}
	return false
}

// Result returns the named result, or nil.
func (r *Report) Result(name string) *Result {
	for i := range r.Results {
		if r.Results[i].Name == name {
			return &r.Results[i]
		}
	}
	return nil
}

// AddRatio records a's throughput over b's when both ran.
func (r *Report) AddRatio(label, a, b string) {
	ra, rb := r.Result(a), r.Result(b)
	if ra == nil || rb == nil || rb.Throughput == 0 {
		return
	}
	r.Ratios = append(r.Ratios, Ratio{Name: label, Value: ra.Throughput / rb.Throughput})
}

// Markdown renders the report as tables.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s on %s against %s.\n\n", r.StartedAt.UTC().Format(time.RFC3339), r.Machine, r.Target)
	if len(r.Settings) > 0 {
		var parts []string
		for _, k := range sortedKeys(r.Settings) {
			parts = append(parts, k+"="+r.Settings[k])
		}
		fmt.Fprintf(&b, "Settings: %s.\n\n", strings.Join(parts, ", "))
	}
	if len(r.Results) > 0 {
		b.WriteString("| scenario | mode | conc | requests | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | outcomes |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	}
	for _, res := range r.Results {
		var codes []string
		for _, c := range res.SortedCodes() {
			codes = append(codes, fmt.Sprintf("%s %d", c, res.Codes[c]))
		}
		l := res.Latency
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n",
			res.Name, res.Mode, res.Concurrency, res.Requests, res.Throughput, l.P50, l.P90, l.P99, l.P999, l.Max, strings.Join(codes, ", "))
	}
	if len(r.Ratios) > 0 {
		b.WriteString("\n| ratio | value |\n|---|---:|\n")
		for _, x := range r.Ratios {
			fmt.Fprintf(&b, "| %s | %.2f |\n", x.Name, x.Value)
		}
	}
	if len(r.Extra) > 0 {
		b.WriteString("\n| measure | value |\n|---|---|\n")
		for _, k := range sortedKeys(r.Extra) {
			fmt.Fprintf(&b, "| %s | %s |\n", k, r.Extra[k])
		}
	}
	if len(r.Targets) > 0 {
		b.WriteString("\n| target | measured | goal | result |\n|---|---|---|---|\n")
		for _, t := range r.Targets {
			met := "pass"
			if !t.Met {
				met = "**not met**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Name, t.Measured, t.Goal, met)
		}
	}
	for _, t := range r.Tables {
		b.WriteString("\n" + t.Markdown())
	}
	if len(r.Checks) > 0 {
		b.WriteString("\n| invariant | result | detail |\n|---|---|---|\n")
		for _, c := range r.Checks {
			ok := "ok"
			if !c.OK {
				ok = "**VIOLATED**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, ok, c.Detail)
		}
	}
	return b.String()
}

// WriteFiles writes report.json, report.md and report.png (when a load ran) into dir.
func (r *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), js, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	if len(r.Results) == 0 { // a run of scenarios with tables of their own only: nothing to chart
		return nil
	}
	return r.WriteChart(filepath.Join(dir, "report.png"))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
