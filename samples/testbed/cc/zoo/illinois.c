// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_illinois: TCP-Illinois, ported to a BPF struct_ops congestion control from Linux
 * net/ipv4/tcp_illinois.c (kernel 6.x). Part of the open-set zoo (no replay in hscc-trace).
 * Paper: S. Liu, T. Başar, R. Srikant, "TCP-Illinois: A Loss- and Delay-Based Congestion Control
 * Algorithm for High-Speed Networks", Performance Evaluation 65(6-7), 2008.
 *
 * Rules as the module (α in Q7, β in Q6):
 *   - once per round (first ACK beyond the round's snd_nxt): with the average queueing delay
 *     d_a (mean RTT of the round − baseRTT) and the maximum d_m (maxRTT − baseRTT):
 *     α = 10 while d_a ≤ d_m/100 (after 5 such rounds once the delay had risen, θ = 5), else
 *     the convex curve α = (d_m − d_1)·α_max / ((d_m − d_1) + (d_a − d_1)(α_max − α_min)/α_min)
 *     (α_min = 0.3, α_max = 10); β = 1/8 for d_a ≤ d_m/10, 1/2 for d_a ≥ 0.8·d_m, linear in
 *     between; below a window of 15 packets α = 1, β = 1/2 (Reno);
 *   - congestion avoidance: +α/cwnd per packet (snd_cwnd_cnt counts packets acknowledged;
 *     cwnd grows by snd_cwnd_cnt·α/cwnd once that reaches a whole packet);
 *   - on a loss ssthresh = cwnd − β·cwnd (≥ 2); an RTO resets α = 1, β = 1/2. Undo as Reno.
 *
 * Departures forced by BPF: none (the 64-bit sum over a round is divided natively).
 *
 * Signals: EV_ROUND at every round end, EV_LOSS at every ssthresh call:
 * hscc-signals: snd_cwnd ssthresh alpha_q7 beta_q6 base_rtt_us max_rtt_us avg_delay_us
 */
#include "hscc_cc.h"

#define IL_ALPHA_SHIFT 7
#define IL_ALPHA_SCALE (1u << IL_ALPHA_SHIFT)
#define IL_ALPHA_MIN ((3 * IL_ALPHA_SCALE) / 10) /* 0.3 */
#define IL_ALPHA_MAX (10 * IL_ALPHA_SCALE)	 /* 10 */
#define IL_ALPHA_BASE IL_ALPHA_SCALE		 /* 1 */
#define IL_RTT_MAX (0xffffffffU / IL_ALPHA_MAX)	 /* 3.3 s */
#define IL_BETA_SHIFT 6
#define IL_BETA_SCALE (1u << IL_BETA_SHIFT)
#define IL_BETA_MIN (IL_BETA_SCALE / 8) /* 0.125 */
#define IL_BETA_MAX (IL_BETA_SCALE / 2) /* 0.5 */
#define IL_BETA_BASE IL_BETA_MAX
#define IL_WIN_THRESH 15
#define IL_THETA 5

struct zill {
	__u64 sum_rtt; /* µs, this round */
	__u16 cnt_rtt;
	__u32 base_rtt;
	__u32 max_rtt;
	__u32 end_seq;
	__u32 alpha;
	__u32 beta;
	__u16 acked;
	__u8 rtt_above;
	__u8 rtt_low;
	__u32 last_da; /* for the signal only */
};
_Static_assert(sizeof(struct zill) <= ICSK_CA_PRIV_BYTES, "illinois state too large");

static __always_inline void il_rtt_reset(struct sock *sk, struct zill *ca)
{
	ca->end_seq = tcp_sk(sk)->snd_nxt;
	ca->cnt_rtt = 0;
	ca->sum_rtt = 0;
}

SEC("struct_ops")
void BPF_PROG(zill_init, struct sock *sk)
{
	struct zill *ca = inet_csk_ca(sk);

	ca->alpha = IL_ALPHA_MAX;
	ca->beta = IL_BETA_BASE;
	ca->base_rtt = 0x7fffffff;
	ca->max_rtt = 0;
	ca->acked = 0;
	ca->rtt_low = 0;
	ca->rtt_above = 0;
	il_rtt_reset(sk, ca);
	SIG(EV_INIT, "%u", IL_WIN_THRESH);
}

SEC("struct_ops")
void BPF_PROG(zill_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct zill *ca = inet_csk_ca(sk);
	__s32 rtt_us = sample->rtt_us;

	ca->acked = sample->pkts_acked;
	if (rtt_us < 0)
		return;
	if (rtt_us > IL_RTT_MAX)
		rtt_us = IL_RTT_MAX;
	if (ca->base_rtt > rtt_us)
		ca->base_rtt = rtt_us;
	if (ca->max_rtt < rtt_us)
		ca->max_rtt = rtt_us;
	++ca->cnt_rtt;
	ca->sum_rtt += rtt_us;
}

static __always_inline __u32 il_alpha(struct zill *ca, __u32 da, __u32 dm)
{
	__u32 d1 = dm / 100; /* low threshold */

	if (da <= d1) {
		if (!ca->rtt_above)
			return IL_ALPHA_MAX;
		if (++ca->rtt_low < IL_THETA) /* wait θ good rounds before α_max */
			return ca->alpha;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		return IL_ALPHA_MAX;
	}
	ca->rtt_above = 1;
	dm -= d1;
	da -= d1;
	return (dm * IL_ALPHA_MAX) / (dm + (da * (IL_ALPHA_MAX - IL_ALPHA_MIN)) / IL_ALPHA_MIN);
}

static __always_inline __u32 il_beta(__u32 da, __u32 dm)
{
	__u32 d2 = dm / 10, d3;

	if (da <= d2)
		return IL_BETA_MIN;
	d3 = (8 * dm) / 10;
	if (da >= d3 || d3 <= d2)
		return IL_BETA_MAX;
	return (IL_BETA_MIN * d3 - IL_BETA_MAX * d2 + (IL_BETA_MAX - IL_BETA_MIN) * da) / (d3 - d2);
}

static __always_inline void il_update_params(struct sock *sk, struct zill *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (tp->snd_cwnd < IL_WIN_THRESH) {
		ca->alpha = IL_ALPHA_BASE;
		ca->beta = IL_BETA_BASE;
	} else if (ca->cnt_rtt > 0) {
		__u32 dm = ca->max_rtt - ca->base_rtt;
		__u64 t = ca->sum_rtt / ca->cnt_rtt;
		__u32 da = (__u32)t - ca->base_rtt;

		ca->last_da = da;
		ca->alpha = il_alpha(ca, da, dm);
		ca->beta = il_beta(da, dm);
	}
	SIG(EV_ROUND, "%u %u %u %u %u %u %u", tp->snd_cwnd, tp->snd_ssthresh, ca->alpha, ca->beta, ca->base_rtt,
	    ca->max_rtt, ca->last_da);
	il_rtt_reset(sk, ca);
}

SEC("struct_ops")
void BPF_PROG(zill_state, struct sock *sk, __u8 new_state)
{
	struct zill *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		ca->alpha = IL_ALPHA_BASE;
		ca->beta = IL_BETA_BASE;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		il_rtt_reset(sk, ca);
	}
}

SEC("struct_ops")
void BPF_PROG(zill_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zill *ca = inet_csk_ca(sk);

	if (after(ack, ca->end_seq))
		il_update_params(sk, ca);
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	} else {
		__u32 delta;

		tp->snd_cwnd_cnt += ca->acked;
		ca->acked = 1;
		delta = (tp->snd_cwnd_cnt * ca->alpha) >> IL_ALPHA_SHIFT;
		if (delta >= tp->snd_cwnd) {
			tp->snd_cwnd = min(tp->snd_cwnd + delta / tp->snd_cwnd, (__u32)tp->snd_cwnd_clamp);
			tp->snd_cwnd_cnt = 0;
		}
	}
}

SEC("struct_ops")
__u32 BPF_PROG(zill_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zill *ca = inet_csk_ca(sk);
	__u32 decr = (tp->snd_cwnd * ca->beta) >> IL_BETA_SHIFT, ss = max(tp->snd_cwnd - decr, 2U);

	SIG(EV_LOSS, "%u %u %u %u %u %u %u", tp->snd_cwnd, ss, ca->alpha, ca->beta, ca->base_rtt, ca->max_rtt,
	    ca->last_da);
	return ss;
}

SEC("struct_ops")
__u32 BPF_PROG(zill_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_illinois = {
	.init = (void *)zill_init,
	.ssthresh = (void *)zill_ssthresh,
	.undo_cwnd = (void *)zill_undo_cwnd,
	.cong_avoid = (void *)zill_cong_avoid,
	.set_state = (void *)zill_state,
	.pkts_acked = (void *)zill_acked,
	.name = "zoo_illinois",
};
