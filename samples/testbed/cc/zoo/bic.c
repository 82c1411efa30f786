// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_bic: BIC-TCP, ported to a BPF struct_ops congestion control from Linux
 * net/ipv4/tcp_bic.c (kernel 6.x). Part of the open-set zoo: hscc-trace has no replay of BIC.
 * Paper: L. Xu, K. Harfoush, I. Rhee, "Binary Increase Congestion Control for Fast, Long Distance
 * Networks", IEEE INFOCOM 2004.
 *
 * What the module does, and so this port:
 *   - slow start as Reno (tcp_slow_start); initial_ssthresh is 0 (off) by default;
 *   - in congestion avoidance the window grows by one packet every `cnt` ACKs, where cnt comes
 *     from a binary search towards the last maximum W_max: below W_max the step per RTT is
 *     (W_max - cwnd)/B (B = 4), at most max_increment = 16 and at least 1/smooth_part·B... (cnt =
 *     cwnd·smooth_part/B when within B packets); above W_max "max probing" grows slowly first
 *     (cnt = cwnd·smooth_part/B), then by (cwnd - W_max)/(B-1), then linearly by 16 per RTT;
 *     windows up to low_window = 14 grow as Reno (cnt = cwnd); before any loss cnt is at most 20;
 *     cnt is divided by the delayed-ACK ratio (an EWMA of packets per ACK, ×16, gain 1/16);
 *     cnt is recomputed at most every HZ/32 jiffies while cwnd is unchanged;
 *   - on a congestion event W_max = cwnd, or cwnd·(1 + β)/2 with fast convergence when the window
 *     did not reach the previous W_max; ssthresh = cwnd·β (β = 819/1024 ≈ 0.8), cwnd/2 at or below
 *     low_window;
 *   - an RTO (state Loss) forgets everything; undo is Reno's.
 *
 * Departures forced by BPF: none in the arithmetic (all 32-bit integer, as in the module); the
 * module parameters are compile-time constants at their defaults.
 *
 * Signals (EV_LOSS at every ssthresh call, state after the rule):
 * hscc-signals: snd_cwnd ssthresh last_max_cwnd cnt delayed_ack
 */
#include "hscc_cc.h"

#define BIC_BETA_SCALE 1024
#define BIC_B 4		     /* binary search towards (max + min)/B */
#define BIC_FAST_CONV 1
#define BIC_MAX_INCR 16
#define BIC_LOW_WINDOW 14
#define BIC_BETA 819	     /* /1024 */
#define BIC_SMOOTH_PART 20
#define BIC_ACK_SHIFT 4

struct zbic {
	__u32 cnt;	     /* grow by one packet after this many ACKs */
	__u32 last_max_cwnd; /* W_max */
	__u32 last_cwnd;
	__u32 last_time;
	__u32 epoch_start;
	__u32 delayed_ack;   /* packets per ACK << 4 */
};
_Static_assert(sizeof(struct zbic) <= ICSK_CA_PRIV_BYTES, "bic state too large");

static __always_inline void zbic_reset(struct zbic *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->epoch_start = 0;
	ca->delayed_ack = 2 << BIC_ACK_SHIFT;
}

SEC("struct_ops")
void BPF_PROG(zbic_init, struct sock *sk)
{
	zbic_reset(inet_csk_ca(sk));
	SIG(EV_INIT, "%u", BIC_LOW_WINDOW);
}

/* tcp_bic.c bictcp_update(): the ACK count per one-packet step */
static __always_inline void zbic_update(struct zbic *ca, __u32 cwnd)
{
	__u32 now = tcp_jiffies32();

	if (ca->last_cwnd == cwnd && (__s32)(now - ca->last_time) <= HSCC_HZ / 32)
		return;
	ca->last_cwnd = cwnd;
	ca->last_time = now;
	if (ca->epoch_start == 0)
		ca->epoch_start = now;

	if (cwnd <= BIC_LOW_WINDOW) { /* Reno-friendly region */
		ca->cnt = cwnd;
		return;
	}
	if (cwnd < ca->last_max_cwnd) {
		__u32 dist = (ca->last_max_cwnd - cwnd) / BIC_B;

		if (dist > BIC_MAX_INCR)
			ca->cnt = cwnd / BIC_MAX_INCR; /* far below: linear, 16 per RTT */
		else if (dist <= 1U)
			ca->cnt = (cwnd * BIC_SMOOTH_PART) / BIC_B; /* close: creep */
		else
			ca->cnt = cwnd / dist; /* binary search step */
	} else {
		if (cwnd < ca->last_max_cwnd + BIC_B)
			ca->cnt = (cwnd * BIC_SMOOTH_PART) / BIC_B;
		else if (cwnd < ca->last_max_cwnd + BIC_MAX_INCR * (BIC_B - 1))
			ca->cnt = (cwnd * (BIC_B - 1)) / (cwnd - ca->last_max_cwnd);
		else
			ca->cnt = cwnd / BIC_MAX_INCR;
	}
	if (ca->last_max_cwnd == 0 && ca->cnt > 20) /* no loss yet: at least 5 % per RTT */
		ca->cnt = 20;
	ca->cnt = (ca->cnt << BIC_ACK_SHIFT) / ca->delayed_ack;
	if (ca->cnt == 0)
		ca->cnt = 1;
}

SEC("struct_ops")
void BPF_PROG(zbic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zbic *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	zbic_update(ca, tp->snd_cwnd);
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(zbic_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zbic *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd, ss;

	ca->epoch_start = 0;
	if (cwnd < ca->last_max_cwnd && BIC_FAST_CONV)
		ca->last_max_cwnd = (cwnd * (BIC_BETA_SCALE + BIC_BETA)) / (2 * BIC_BETA_SCALE);
	else
		ca->last_max_cwnd = cwnd;
	if (cwnd <= BIC_LOW_WINDOW)
		ss = max(cwnd >> 1U, 2U);
	else
		ss = max((cwnd * BIC_BETA) / BIC_BETA_SCALE, 2U);
	SIG(EV_LOSS, "%u %u %u %u %u", cwnd, ss, ca->last_max_cwnd, ca->cnt, ca->delayed_ack);
	return ss;
}

SEC("struct_ops")
void BPF_PROG(zbic_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		zbic_reset(inet_csk_ca(sk));
}

/* delayed-ACK ratio: ratio = 15/16·ratio + 1/16·packets of this ACK (×16), in the open state */
SEC("struct_ops")
void BPF_PROG(zbic_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct zbic *ca = inet_csk_ca(sk);

	if (hscc_ca_state(sk) == TCP_CA_Open)
		ca->delayed_ack += sample->pkts_acked - (ca->delayed_ack >> BIC_ACK_SHIFT);
}

SEC("struct_ops")
__u32 BPF_PROG(zbic_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_bic = {
	.init = (void *)zbic_init,
	.ssthresh = (void *)zbic_ssthresh,
	.cong_avoid = (void *)zbic_cong_avoid,
	.set_state = (void *)zbic_state,
	.undo_cwnd = (void *)zbic_undo_cwnd,
	.pkts_acked = (void *)zbic_acked,
	.name = "zoo_bic",
};
