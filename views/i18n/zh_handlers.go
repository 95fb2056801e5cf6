package i18n

// What the handlers compose in Go: the pages' titles (the layout translates
// p.Title) and the flashes after a form's post (translated at display, so a
// flash built with + is registered as its format).
func init() {
	add(map[string]string{
		// Titles.
		"Flash sales":        "限时秒杀",
		"Checkout":           "结算",
		"Receipt %s":         "支付凭证 %s",
		"Raffle: %s":         "抽签：%s",
		"Waiting room: %s":   "排队抢购：%s",
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
		"You are logged out.":                                 "你已退出登录。",
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

	add(map[string]string{
		// Flashes: the merchant's buttons and the desk.
		"The sale of “%s” has ended.":                                  "“%s”的秒杀已结束。",
		"The slot's sale has ended.":                                   "本场次的秒杀已结束。",
		"Hidden from shoppers.":                                        "已对顾客隐藏。",
		"Shown to shoppers again.":                                     "已重新对顾客显示。",
		"Nothing changed.":                                             "没有任何修改。",
		"Switches changed: in force on every process within a second.": "开关已修改：一秒内对所有进程生效。",
		"Refunded #%s: %s back to %s.":                                 "已退款 #%s：%s 已退还给 %s。",
		"The reason %s.":                                               "退款原因%s。",
		"The reason must be 1–%d characters.":                          "退款原因须为 1–%d 个字符。",
		"The reason must be a single line.":                            "退款原因须为单行。",
		"The reason is not valid UTF-8 text.":                          "退款原因不是有效的 UTF-8 文本。",
		"The reason is longer than %d characters.":                     "退款原因超过 %d 个字符。",

		// The coupon form's own complaints, beside their fields.
		"enter both times":                 "请填写两个时间",
		"enter an amount like 10 or 9.90":  "请输入金额，如 10 或 9.90",
		"enter an amount like 50 or 49.90": "请输入金额，如 50 或 49.90",
		"enter a whole number":             "请输入整数",
		"enter a whole number of days":     "请输入整数天数",
		"enter the start date and time":    "请输入开始日期和时间",
		"enter the end date and time":      "请输入结束日期和时间",
	})
}
