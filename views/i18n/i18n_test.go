package i18n

import (
	"context"
	"testing"
)

func TestAcceptLanguage(t *testing.T) {
	for header, want := range map[string]Lang{
		"":                           En,
		"zh-CN,zh;q=0.9,en;q=0.8":    Zh,
		"en-US,en;q=0.9,zh-CN;q=0.8": En,
		"fr-FR,zh-TW;q=0.5":          Zh,
		"de":                         En,
		"en;q=0.2, zh-Hans;q=0.7":    Zh,
		"zh;q=0.1, en;q=0.1":         Zh, // a tie: the first
	} {
		if got := FromAcceptLanguage(header); got != want {
			t.Errorf("Accept-Language %q: %s, want %s", header, got, want)
		}
	}
}

func TestTranslate(t *testing.T) {
	add(map[string]string{
		"Order %s refunded for %s.": "订单 %s 已退款 %s。",
		"%d of %d left":             "剩余 %d/%d",
		"Sold %[1]d to %[2]s":       "%[2]s 买走 %[1]d 件",
		"Plain words":               "平常的话",
	})
	zhCtx := With(context.Background(), Zh)
	for in, want := range map[string]string{
		"Plain words":                         "平常的话",
		"Order #G1-0001 refunded for ¥49.90.": "订单 #G1-0001 已退款 ¥49.90。",
		"3 of 10 left":                        "剩余 3/10",
		"Sold 2 to ann":                       "ann 买走 2 件",
		"Not in the catalog":                  "Not in the catalog",
	} {
		if got := T(zhCtx, in); got != want {
			t.Errorf("T(%q) = %q, want %q", in, got, want)
		}
	}
	if got := F(zhCtx, "%d of %d left", 3, 10); got != "剩余 3/10" {
		t.Errorf("F = %q", got)
	}
	if got := T(context.Background(), "Plain words"); got != "Plain words" {
		t.Errorf("English T = %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a message translated twice two ways: want a panic")
		}
	}()
	add(map[string]string{"Plain words": "别的话"})
}
