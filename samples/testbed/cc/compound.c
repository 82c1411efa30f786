// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_ctcp: Compound TCP, from K. Tan, J. Song, Q. Zhang, M. Sridharan, "A Compound TCP Approach
 * for High-speed and Long Distance Networks" / "Compound TCP: A Scalable and TCP-Friendly
 * Congestion Control for High-speed Networks", PFLDnet 2006, §III, as a BPF struct_ops
 * congestion control. Windows in packets (Q16 fixed point), times in µs.
 *
 * Rules (paper section → where below):
 *   §III-A eq. (1)  win = min(cwnd + dwnd, awnd). snd_cwnd = ⌊cwnd + dwnd⌋; the min with awnd is
 *                   the kernel's own send test (tcp_snd_wnd_test: never more than the peer's
 *                   window in flight), and the growth rules run only while cwnd-limited
 *                   (tcp_is_cwnd_limited), so neither component grows behind a receive-window
 *                   limit.                                                  → ctcp_cong_avoid
 *   §III-A eq. (2)  loss-based component in congestion avoidance: cwnd += 1/win per ACK, i.e.
 *                   "increased by one MSS every RTT": an ACK of N packets adds N/win.
 *   §III-A          slow start unchanged (Reno's tcp_slow_start), dwnd = 0 in slow start at the
 *                   start of the connection; "the delay-based component is effective only when
 *                   the connection is working at congestion avoidance phase".
 *   §III-B          baseRTT = min RTT observed; the backlog
 *                   diff = (Expected − Actual)·baseRTT = win·(1 − baseRTT/RTT), "derived from TCP
 *                   Vegas": computed once per round, RTT the round's smallest sample (Vegas' min
 *                   filter against delayed ACKs), rounds with ≤ 2 samples skipped (as Vegas),
 *                   samples only in the open state. A round ends on the first ACK at or above the
 *                   snd_nxt of the round's start (and beyond the ACK that started it) — the
 *                   project's definition of a round, the replay's — checked on every ACK
 *                   (in_ack_event), in every state, so rounds run on through a recovery. The paper's text names an "exponentially smoothed current
 *                   RTT, sRTT": -DCTCP_RTT_SRTT builds that variant (RTT = the kernel's srtt at the
 *                   round end); the default is the round minimum, as the replay's default
 *                   (compound.rtt_source=round_min).                         → ctcp_round
 *   §III-B eq. (5)  once per round: diff < γ → dwnd += (α·win^k − 1)⁺;
 *                   diff ≥ γ → dwnd = (dwnd − ζ·diff)⁺;
 *                   loss (3 duplicate ACKs) → dwnd = (win·(1 − β) − cwnd/2)⁺ and cwnd = cwnd/2
 *                   (§III-A: "halved upon a packet loss event").             → ctcp_ssthresh
 *   §III-B          "Delay-based component only kicks in when win is larger than some threshold"
 *                   (low_window = 41 in §IV's simulations): the per-round update of eq. (5)
 *                   lines 1-2 runs only while win > 41; below it dwnd keeps its value, so the
 *                   whole window grows by 1 per RTT and halves on loss (β = 1/2) — "revert to
 *                   standard TCP behavior when the window is small". The loss rule always applies.
 *   §III-B          retransmission timeout: dwnd = 0 and the delay component is disabled until
 *                   congestion avoidance (slow start after the RTO ends). → ctcp_cwnd_event
 *   §III-C          α = 1/8, β = 1/2, k = 3/4 ("implemented with fast integer algorithm of square
 *                   root": win^(3/4) = √(win·√win)), ζ = 1.
 *   §III-C          γ auto-tuning ("γ should not exceed the flow's share of the bottleneck
 *                   buffer"): at each fast-retransmit loss with a fresh round measurement,
 *                   γ ← (1 − λ)·γ + λ·¾·diff_reno with diff_reno = cwnd·(1 − baseRTT/RTT) the
 *                   loss-based component's backlog at the last round end, λ = 1/4, clamped to
 *                   [5, 30], γ starting at 30 (the rule of the project's replay,
 *                   docs/algorithms/compound.md; the paper's own equations are images missing
 *                   from its text). Define CTCP_NO_GAMMA_TUNING for a fixed γ = 30.
 *
 * Linux core around it (the sender is a Linux socket): recovery is PRR towards ssthresh =
 * ⌊cwnd/2 + dwnd⌋ (the whole reduced window), which becomes cwnd at recovery exit; an undo
 * (spurious retransmission) restores both components; when the core changes snd_cwnd on its own
 * (RTO, undo, restart after idle, PRR ending below ssthresh) the components are re-derived from
 * it: dwnd is kept up to the new window and cwnd is the rest.
 *
 * Fixed point: windows in Q16 (1/65536 packet): per-ACK increments N/win truncate < 2^-16 packet
 * per ACK (< 0.02 packet over 1000 ACKs); diff = win·(RTT − baseRTT)/RTT truncates < 2^-16
 * packet; win^(3/4) from two integer square roots on Q16 values is low by < 2^-15 relative;
 * γ in Q16, ¾·λ applied as ·3/16 exactly. snd_cwnd = ⌊win⌋ (the kernel counts whole packets: up to
 * one packet below the real-valued window).
 *
 * Signals: EV_ROUND at every round end (action: 0 skipped, 1 increase, 2 retreat, 3 held at or
 * below the low window), EV_LOSS at the ssthresh hook, EV_UNDO, EV_CWND_EVENT (RTO):
 * hscc-signals: base_rtt_us rtt_us cnt_rtt diff:Q16 diff_reno:Q16 gamma:Q16 dwnd:Q16 cwnd_loss:Q16 win:Q16 action
 */
#include "hscc_cc.h"

#define CTCP_ALPHA_SHIFT 3 /* α = 1/8 */
#define CTCP_LOW_WINDOW 41 /* §IV: delay component only above 41 packets */
#define CTCP_GAMMA_INIT (30ULL << Q16)
#define CTCP_GAMMA_MIN (5ULL << Q16)
#define CTCP_GAMMA_MAX (30ULL << Q16)
#define CTCP_MIN_SAMPLES 2 /* a round with ≤ 2 RTT samples is skipped */

struct ctcp {
	__u32 cwnd_q;	   /* loss-based component (Q16 packets) */
	__u32 dwnd_q;	   /* delay-based component (Q16) */
	__u32 gamma_q;	   /* early-congestion threshold γ (Q16) */
	__u32 diff_reno_q; /* Reno component's backlog at the last round end (Q16) */
	__u32 base_rtt;	   /* µs */
	__u32 min_rtt;	   /* smallest sample of the current round, µs */
	__u32 cnt_rtt;	   /* samples in the current round */
	__u32 beg_snd_nxt; /* the round ends with the first ACK at or above this */
	__u32 start_una;   /* ... and beyond this one (the ACK that started the round) */
	__u32 last_win;	   /* snd_cwnd as this program last set it */
	__u32 prior_cwnd_q, prior_dwnd_q, prior_gamma_q; /* before the last reduction (undo) */
	__u8 diff_reno_fresh; /* a round measurement not yet used by a loss */
	__u8 delay_on;	      /* delay component enabled (off after an RTO until congestion avoidance) */
	__u8 sampling;	      /* in the open state: take RTT samples for the round */
	__u8 started;	      /* the first round has begun (at the first ACK) */
};
_Static_assert(sizeof(struct ctcp) <= ICSK_CA_PRIV_BYTES, "ctcp state too large");

static __always_inline __u64 ctcp_win_q(const struct ctcp *ca)
{
	return (__u64)ca->cwnd_q + ca->dwnd_q;
}

static __always_inline void ctcp_new_round(struct sock *sk, struct ctcp *ca)
{
	ca->beg_snd_nxt = tcp_sk(sk)->snd_nxt;
	ca->start_una = tcp_sk(sk)->snd_una;
	ca->cnt_rtt = 0;
	ca->min_rtt = 0x7fffffff;
}

/* snd_cwnd = ⌊cwnd + dwnd⌋ (at least 2) */
static __always_inline void ctcp_apply(struct sock *sk, struct ctcp *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 w = ctcp_win_q(ca) >> Q16;

	if (w < 2)
		w = 2;
	tp->snd_cwnd = min(w, tp->snd_cwnd_clamp);
	ca->last_win = tp->snd_cwnd;
}

/* the core changed snd_cwnd (RTO, undo, restart, PRR below ssthresh): re-derive the components,
 * keeping dwnd up to the new window */
static __always_inline void ctcp_resync(struct sock *sk, struct ctcp *ca)
{
	__u32 w = tcp_sk(sk)->snd_cwnd;
	__u64 w_q = (__u64)w << Q16;

	if (w == ca->last_win)
		return;
	if (ca->dwnd_q > w_q)
		ca->dwnd_q = w_q;
	ca->cwnd_q = w_q - ca->dwnd_q;
	ca->last_win = w;
}

SEC("struct_ops")
void BPF_PROG(ctcp_init, struct sock *sk)
{
	struct ctcp *ca = inet_csk_ca(sk);

	ca->cwnd_q = tcp_sk(sk)->snd_cwnd << Q16;
	ca->dwnd_q = 0;
	ca->gamma_q = CTCP_GAMMA_INIT;
	ca->diff_reno_q = 0;
	ca->diff_reno_fresh = 0;
	ca->base_rtt = 0x7fffffff;
	ca->delay_on = 1;
	ca->sampling = 1;
	ca->last_win = tcp_sk(sk)->snd_cwnd;
	ca->prior_cwnd_q = ca->cwnd_q;
	ca->prior_dwnd_q = 0;
	ca->prior_gamma_q = ca->gamma_q;
	ca->started = 0;
	ctcp_new_round(sk, ca);
	SIG(EV_INIT, "%u", ca->gamma_q);
}

/* §III-B: baseRTT = min of all samples; the round's min (open state only) */
SEC("struct_ops")
void BPF_PROG(ctcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct ctcp *ca = inet_csk_ca(sk);
	__u32 rtt;

	if (sample->rtt_us <= 0)
		return;
	rtt = sample->rtt_us;
	if (rtt < ca->base_rtt)
		ca->base_rtt = rtt;
	if (ca->sampling) {
		ca->min_rtt = min(ca->min_rtt, rtt);
		ca->cnt_rtt++;
	}
}

SEC("struct_ops")
void BPF_PROG(ctcp_set_state, struct sock *sk, __u8 new_state)
{
	struct ctcp *ca = inet_csk_ca(sk);

	/* no sampling or update during recovery (the round itself runs on) */
	ca->sampling = new_state == TCP_CA_Open;
}

/* α·win^k − 1 in Q16 with k = 3/4: win^(3/4) = √(win·√win) */
static __always_inline __s64 ctcp_increase_q(__u64 win_q)
{
	__u64 s = isqrt64(win_q << Q16);   /* √win in Q16 */
	__u64 p = isqrt64(win_q * s);	   /* win^(3/4) in Q16 */

	return (__s64)(p >> CTCP_ALPHA_SHIFT) - (__s64)ONE_Q16;
}

/* §III-B eq. (5) lines 1-2, once per round */
static __always_inline void ctcp_round(struct sock *sk, struct ctcp *ca, bool may_grow)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 rtt = ca->min_rtt, base = ca->base_rtt, cnt = ca->cnt_rtt;
	__u64 win_q = ctcp_win_q(ca), diff_q = 0;
	__u32 action = 0;

#ifdef CTCP_RTT_SRTT
	rtt = tp->srtt_us >> 3;
#endif
	if (cnt > CTCP_MIN_SAMPLES && ca->sampling && ca->delay_on && !tcp_in_slow_start(tp) && rtt >= base &&
	    rtt > 0) {
		/* diff = win·(1 − baseRTT/RTT) = win·(RTT − baseRTT)/RTT */
		diff_q = win_q * (rtt - base) / rtt;
		ca->diff_reno_q = (__u64)ca->cwnd_q * (rtt - base) / rtt;
		ca->diff_reno_fresh = 1;
		if ((win_q >> Q16) <= CTCP_LOW_WINDOW) {
			action = 3; /* standard TCP behaviour: dwnd held */
		} else if (diff_q < ca->gamma_q) {
			__s64 inc = ctcp_increase_q(win_q);

			if (may_grow && inc > 0)
				ca->dwnd_q += inc;
			action = 1;
		} else {
			/* ζ = 1 */
			ca->dwnd_q = ca->dwnd_q > diff_q ? ca->dwnd_q - diff_q : 0;
			action = 2;
		}
	}
	SIG(EV_ROUND, "%u %u %u %u %u %u %u %u %llu %u", base, rtt, cnt, (__u32)diff_q, ca->diff_reno_q, ca->gamma_q,
	    ca->dwnd_q, ca->cwnd_q, ctcp_win_q(ca), action);
	ctcp_new_round(sk, ca);
}

SEC("struct_ops")
void BPF_PROG(ctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ctcp *ca = inet_csk_ca(sk);
	bool limited = tcp_is_cwnd_limited(sk);

	ctcp_resync(sk, ca);
	if (!limited) {
		ctcp_apply(sk, ca);
		return;
	}
	if (tcp_in_slow_start(tp)) {
		/* §III-A: Reno's slow start on the whole window; the loss component follows it */
		tcp_slow_start(tp, acked);
		if (ca->dwnd_q > ((__u64)tp->snd_cwnd << Q16))
			ca->dwnd_q = (__u64)tp->snd_cwnd << Q16;
		ca->cwnd_q = ((__u64)tp->snd_cwnd << Q16) - ca->dwnd_q;
		ca->last_win = tp->snd_cwnd;
		return;
	}
	/* congestion avoidance: §III-B the delay component may act again after an RTO */
	ca->delay_on = 1;
	/* §III-A eq. (2): cwnd += N/win */
	ca->cwnd_q += ((__u64)acked << (2 * Q16)) / ctcp_win_q(ca);
	ctcp_apply(sk, ca);
	/* a retreating dwnd must not send the window back into slow start */
	if (tp->snd_cwnd < tp->snd_ssthresh)
		tp->snd_ssthresh = tp->snd_cwnd;
}

/* every ACK (after its RTT sample, before the congestion state machine and the growth): the end of
 * a round — the first ACK at or above the round's starting snd_nxt and beyond its starting ACK */
SEC("struct_ops")
void BPF_PROG(ctcp_in_ack_event, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ctcp *ca = inet_csk_ca(sk);

	if (!ca->started) {
		/* the first ACK of data starts round 0 (its own sample belongs to it) */
		ca->started = 1;
		ca->beg_snd_nxt = tp->snd_nxt;
		ca->start_una = tp->snd_una;
		return;
	}
	if (!before(tp->snd_una, ca->beg_snd_nxt) && after(tp->snd_una, ca->start_una)) {
		/* in recovery snd_cwnd is PRR's, not this program's: leave the components alone (the
		 * round's update is skipped there anyway); cong_avoid applies the new window */
		if (ca->sampling)
			ctcp_resync(sk, ca);
		ctcp_round(sk, ca, tcp_is_cwnd_limited(sk));
	}
}

/* §III-B eq. (5) line 3 and §III-C γ auto-tuning, at the entry of recovery / CWR / loss */
SEC("struct_ops")
__u32 BPF_PROG(ctcp_ssthresh, struct sock *sk)
{
	struct ctcp *ca = inet_csk_ca(sk);
	__u64 win_q, half_q, target_q;
	__u32 ss;

	ctcp_resync(sk, ca);
	ca->prior_cwnd_q = ca->cwnd_q;
	ca->prior_dwnd_q = ca->dwnd_q;
	ca->prior_gamma_q = ca->gamma_q;
#ifndef CTCP_NO_GAMMA_TUNING
	if (ca->diff_reno_fresh) {
		/* γ ← (1 − λ)γ + λ·¾·diff_reno, λ = 1/4: γ·3/4 + diff_reno·3/16 */
		__u64 g = ((__u64)ca->gamma_q * 3 >> 2) + ((__u64)ca->diff_reno_q * 3 >> 4);

		ca->gamma_q = max(min(g, CTCP_GAMMA_MAX), CTCP_GAMMA_MIN);
		ca->diff_reno_fresh = 0;
	}
#endif
	win_q = ctcp_win_q(ca);
	half_q = ca->cwnd_q >> 1;
	target_q = win_q >> 1; /* win·(1 − β), β = 1/2 */
	ca->dwnd_q = target_q > half_q ? target_q - half_q : 0;
	ca->cwnd_q = half_q;
	ss = ctcp_win_q(ca) >> Q16;
	if (ss < 2)
		ss = 2;
	ca->last_win = ss; /* the window recovery ends at (tcp_end_cwnd_reduction: cwnd = ssthresh) */
	SIG(EV_LOSS, "%u %u %u %u %u %u %u %u %llu %u", ca->base_rtt, ca->min_rtt, ca->cnt_rtt, 0, ca->diff_reno_q,
	    ca->gamma_q, ca->dwnd_q, ca->cwnd_q, ctcp_win_q(ca), ss);
	return ss;
}

SEC("struct_ops")
void BPF_PROG(ctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct ctcp *ca = inet_csk_ca(sk);

	if (ev != CA_EVENT_LOSS)
		return;
	/* §III-B: a retransmission timeout is not under control law (5): dwnd = 0, delay component
	 * off until congestion avoidance; no γ update */
	ca->gamma_q = ca->prior_gamma_q;
	ca->dwnd_q = 0;
	ca->cwnd_q = tcp_sk(sk)->snd_cwnd << Q16;
	ca->delay_on = 0;
	ca->last_win = tcp_sk(sk)->snd_cwnd;
	SIG(EV_CWND_EVENT, "%u %u %u %u %u %u %u %u %llu %u", ca->base_rtt, ca->min_rtt, ca->cnt_rtt, 0,
	    ca->diff_reno_q, ca->gamma_q, ca->dwnd_q, ca->cwnd_q, ctcp_win_q(ca), (__u32)ev);
}

/* a spurious reduction is undone: both components as before it (Linux: max(cwnd, prior_cwnd)) */
SEC("struct_ops")
__u32 BPF_PROG(ctcp_undo_cwnd, struct sock *sk)
{
	struct ctcp *ca = inet_csk_ca(sk);
	__u32 w = tcp_reno_undo_cwnd(sk);

	ca->cwnd_q = ca->prior_cwnd_q;
	ca->dwnd_q = ca->prior_dwnd_q;
	ca->gamma_q = ca->prior_gamma_q;
	ca->last_win = w;
	if (w != (__u32)(ctcp_win_q(ca) >> Q16)) {
		/* tcp_reno_undo_cwnd kept a larger current window: the loss part takes the rest */
		__u64 w_q = (__u64)w << Q16;

		if (ca->dwnd_q > w_q)
			ca->dwnd_q = w_q;
		ca->cwnd_q = w_q - ca->dwnd_q;
	}
	SIG(EV_UNDO, "%u %u %u %u %u %u %u %u %llu %u", ca->base_rtt, ca->min_rtt, ca->cnt_rtt, 0, ca->diff_reno_q,
	    ca->gamma_q, ca->dwnd_q, ca->cwnd_q, ctcp_win_q(ca), w);
	return w;
}

SEC(".struct_ops")
struct tcp_congestion_ops bpf_ctcp = {
	.init = (void *)ctcp_init,
	.ssthresh = (void *)ctcp_ssthresh,
	.undo_cwnd = (void *)ctcp_undo_cwnd,
	.cong_avoid = (void *)ctcp_cong_avoid,
	.pkts_acked = (void *)ctcp_pkts_acked,
	.in_ack_event = (void *)ctcp_in_ack_event,
	.set_state = (void *)ctcp_set_state,
	.cwnd_event = (void *)ctcp_cwnd_event,
	.name = "bpf_ctcp",
};
