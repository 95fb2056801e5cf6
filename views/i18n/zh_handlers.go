package i18n

// What the handlers compose in Go: the pages' titles (the layout translates
// p.Title) and the flashes after a form's post (translated at display, so a
// flash built with + is registered as its format).
func init() {
	add(map[string]string{
		// Titles.
		"Flash sales":        "限时秒杀",
		"Checkout":           "结算",
		"Receipt %s":         "收据 %s",
		"Raffle: %s":         "抽签：%s",
		"Waiting room: %s":   "排队室：%s",
		"Merchant dashboard": "商家后台",
		"Accounts":           "账号管理",
		"Time slots":         "秒杀场次",
		"Audit log":          "操作日志",
		"Steering switches":  "运营开关",
		"Refund %s":          "退款 %s",
		"Claims · %s":        "领取记录 · %s",
		"Grabs · %s":         "领取记录 · %s",

		// The error page (its headlines are in zh_layout.go).
		"Error %d.":         "错误 %d。",
		"Back to the sales": "返回秒杀首页",

		// Flashes: accounts.
		"Settings saved.": "设置已保存。",
		"Password changed. Every other device is signed out.": "密码已修改，其他设备均已退出登录。",
		"Too many attempts. Try again in %s s.":               "尝试次数过多，请 %s 秒后再试。",
		"Welcome, %s! Your account is ready.":                 "欢迎你，%s！账号已开通。",
		"You are logged out.":                                 "您已退出登录。",
		"Account “%s” created as %s.":                         "账号“%s”已创建，角色：%s。",

		// Flashes: orders and checkout.
		"Pick a coupon from the list, or none.":            "请从列表中选一张优惠券，或不使用优惠券。",
		"Only a paid order can be refunded.":               "只有已支付的订单才能退款。",
		"Only an order awaiting payment can be cancelled.": "只有待支付的订单才能取消。",
		"Refunded %s.": "已退款 %s。",
		"Cancelled.":   "已取消。",

		// Flashes: the merchant's forms.
		"Coupon “%s” created.":                               "优惠券“%s”已创建。",
		"Grab window moved; reminders follow the new start.": "领取时间已调整，提醒随新的开始时间发送。",
		"Slot “%s” created. Add its goods below.":            "场次“%s”已创建，请在下方添加商品。",
		"Slot saved.":                  "场次已保存。",
		"“%s” added with %s in stock.": "已添加“%s”，库存 %s。",
		"Goods saved.":                 "商品已保存。",
		"Red packet created: %s.":      "红包已创建：%s。",
	})
}
