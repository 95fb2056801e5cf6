package i18n

import (
	"sort"
	"strings"
	"testing"
)

// zhAvoided are words the Chinese pages must not use, each with why: a
// calque of the English, jargon a shopper does not say, a clumsy phrase.
var zhAvoided = map[string]string{
	"排队室":   "a calque of “waiting room”: say 排队 or 排队抢购",
	"入库":    "warehouse jargon for “recorded”: say 已保存",
	"工作量证明": "jargon for the proof of work: say 防刷验证",
	"这么久":   "clumsy: say how long (距开始已不到 10 分钟)",
	"（分）":   "money is shown in yuan",
	"（位":    "bits are jargon",
}

// The Chinese catalog speaks to the reader one way (你, as the shop's
// casual tone does; never 您 beside it), uses none of the avoided words,
// and writes a coupon's percent off as 折.
func TestChinesePhrasing(t *testing.T) {
	var en []string
	for k := range zh.exact {
		en = append(en, k)
	}
	sort.Strings(en)
	for _, k := range en {
		v := zh.exact[k]
		if strings.Contains(v, "您") {
			t.Errorf("%q → %q: says 您 where the shop says 你", k, v)
		}
		for w, why := range zhAvoided {
			if strings.Contains(v, w) {
				t.Errorf("%q → %q: %q is %s", k, v, w, why)
			}
		}
	}
	for msg, want := range map[string]string{
		"15% off any order":                    "全场8.5折",
		"10% off orders of ¥50.00 or more":     "满¥50.00打9折",
		"¥20.00 off orders of ¥100.00 or more": "满¥100.00减¥20.00",
		"¥5.00 off any order":                  "无门槛减¥5.00",
		"12% off":                              "8.8折",
		"Grab one":                             "去领券中心领一张", // then "in the coupon centre." says nothing more
		"in the coupon centre.":                "",
		"Reminders 10 minutes or more before the start are too late: it opens sooner than that.": "距开始已不到 10 分钟，提前 10 分钟或更早的提醒来不及了。",
	} {
		if got := Zh.T(msg); got != want {
			t.Errorf("%q in Chinese: %q, want %q", msg, got, want)
		}
	}
}
