package model_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/seckill/seckill/db/model"
)

// documented names each bound docs/openapi.yaml states of an input (a
// schema's property, "Schema.property", or a parameter, "param Name") and
// the table's entry it states.
var documented = map[string]model.Bound{
	"GoodsInput.title":               model.GoodsTitle,
	"GoodsInput.description":         model.GoodsDescription,
	"GoodsInput.stock":               model.GoodsStock,
	"GoodsInput.limit_per_user":      model.GoodsLimitPerUser,
	"GoodsInput.shards":              model.GoodsShards,
	"GoodsInput.pow_bits":            model.PowBits,
	"GoodsInput.queue_rate":          model.QueueRate,
	"GoodsInput.admission_seconds":   model.AdmissionSeconds,
	"Goods.shards":                   model.GoodsShards,
	"Goods.pow_bits":                 model.PowBits,
	"Goods.queue_rate":               model.QueueRate,
	"PowChallenge.bits":              model.PowBits,
	"CouponInput.title":              model.CouponTitle,
	"CouponInput.min_spend_cents":    model.CouponMinSpend,
	"CouponInput.stock":              model.CouponStock,
	"CouponInput.limit_per_user":     model.CouponLimitPerUser,
	"CouponInput.valid_days":         model.CouponValidDays,
	"NewRedPacket.title":             model.RedPacketTitle,
	"NewRedPacket.total_cents":       model.RedPacketTotalCents,
	"NewRedPacket.count":             model.RedPacketCount,
	"Switches.stock_push_ms":         model.StockPushMS,
	"Switches.pow_floor_bits":        model.PowBits,
	"SwitchesChange.stock_push_ms":   model.StockPushMS,
	"SwitchesChange.pow_floor_bits":  model.PowBits,
	"ReminderBooking.minutes_before": model.ReminderLead,
	"queue codes.count":              model.QueueCodes,
	"queue codes.note":               model.QueueCodeNote,
	"queue code.code":                model.QueueCode,
	"param Idempotency-Key":          model.RequestKey,
	"param X-Request-ID":             model.RequestKey,
	"param X-Pow":                    model.PowProof,
	"param X-Admission":              model.Admission,
}

// answers are bounds of what the server answers, not of an input.
var answers = map[string]bool{
	"PowChallenge.solutions": true, // how many solutions a challenge asks (db/fair/pass.go)
}

// TestOpenAPIBoundsAreTheTable reads every maximum, minimum, maxLength and
// minLength docs/openapi.yaml states: each ceiling (maximum, maxLength) must
// be an input of the table's (documented), and each bound of an input the
// table's number. A floor of what the server answers (minimum: 0 of a
// count) is not an input's and is let be.
func TestOpenAPIBoundsAreTheTable(t *testing.T) {
	raw, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	walkBounds(&doc, nil, func(name string, line int, bounds map[string]int64) {
		b, ok := documented[name]
		ceiling := bounds["maximum"] != 0 || bounds["maxLength"] != 0
		if !ok {
			if ceiling && !answers[name] {
				t.Errorf("openapi.yaml:%d: %s states a ceiling the table (db/model/limits.go) does not have: add it there and to documented", line, name)
			}
			return
		}
		seen[name] = true
		for word, v := range bounds {
			want := b.Max
			if strings.HasPrefix(word, "min") {
				want = b.Min
			}
			if v != want {
				t.Errorf("openapi.yaml:%d: %s has %s %d; the table says %d", line, name, word, v, want)
			}
		}
	})
	for name := range documented {
		if !seen[name] {
			t.Errorf("%s: no bound of it in openapi.yaml", name)
		}
	}
}

// walkBounds calls f for each schema under n stating a bound, with the
// name of what it bounds (see documented) and the bounds by keyword.
func walkBounds(n *yaml.Node, path []string, f func(name string, line int, bounds map[string]int64)) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walkBounds(c, path, f)
		}
	case yaml.MappingNode:
		bounds := map[string]int64{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			switch k {
			case "maximum", "minimum", "maxLength", "minLength":
				x, _ := strconv.ParseInt(v.Value, 10, 64)
				bounds[k] = x
			case "name": // a parameter: its schema's bounds are its
				if v.Kind == yaml.ScalarNode {
					path = append(path[:len(path):len(path)], "param "+v.Value)
				}
			}
		}
		if len(bounds) > 0 {
			f(boundName(path), n.Line, bounds)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkBounds(n.Content[i+1], append(path[:len(path):len(path)], n.Content[i].Value), f)
		}
	}
}

// boundName is what a schema at path bounds: "param X" for a parameter's,
// "Schema.property" for a component's property, and for a property of a
// request body inline the operation's summary's first words, ".property".
func boundName(path []string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if strings.HasPrefix(path[i], "param ") {
			return path[i]
		}
	}
	prop := ""
	for i := len(path) - 1; i > 0; i-- {
		if path[i-1] == "properties" {
			prop = path[i]
			break
		}
	}
	for i, p := range path {
		if p == "schemas" && i+1 < len(path) && path[i-1] == "components" {
			return path[i+1] + "." + prop
		}
	}
	for i, p := range path {
		if p == "paths" && i+1 < len(path) {
			return inlineName(path[i+1]) + "." + prop
		}
	}
	return strings.Join(path, "/")
}

// inlineName names the inline request bodies that state bounds.
func inlineName(route string) string {
	switch {
	case strings.HasSuffix(route, "/queue/codes"):
		return "queue codes"
	case strings.Contains(route, "/queue"):
		return "queue code"
	}
	return route
}

func TestBoundText(t *testing.T) {
	for n, want := range map[int64]string{1: "1", 1000: "1000", 3650: "3650", 10_000: "10,000", 1_000_000: "1,000,000", 100_000_000: "100,000,000"} {
		if got := model.Text(n); got != want {
			t.Errorf("Text(%d) = %q, want %q", n, got, want)
		}
	}
}
