package views

import (
	"context"
	"strings"
	"testing"

	"github.com/seckill/seckill/views/i18n"
)

// TestErrorPageInChinese: the error page's headline and footer read in
// Chinese, and a message already put in Chinese ends with "。", not ".".
func TestErrorPageInChinese(t *testing.T) {
	ctx := i18n.With(context.Background(), i18n.Zh)
	var b strings.Builder
	msg := i18n.T(ctx, "no such page")
	if err := ErrorPage(Page{Title: "Something went wrong"}, 404, msg).Render(ctx, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"页面不存在</h1>", ">页面不存在。</p>", "错误 404。", "返回秒杀首页", "<title>出错了 · seckill</title>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the error page lacks %q:\n%s", want, b.String())
		}
	}
	if got := sentence("must be 1–64 printable characters"); got != "Must be 1–64 printable characters." {
		t.Errorf("sentence in English = %q", got)
	}
	if got := sentence("商品 7 不存在"); got != "商品 7 不存在。" {
		t.Errorf("sentence in Chinese = %q", got)
	}
	if got := sentence("须为金额，如 88.88"); got != "须为金额，如 88.88。" {
		t.Errorf("sentence in Chinese = %q", got)
	}
}
