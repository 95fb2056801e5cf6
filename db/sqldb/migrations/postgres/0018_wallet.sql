-- A shopper's wallet lists their red packet winnings: the shares by user.
CREATE INDEX redpacket_shares_by_user ON redpacket_shares (user_id, grabbed_ms) WHERE user_id IS NOT NULL;
