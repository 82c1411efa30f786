// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_fusion: TCP-Fusion, from K. Kaneko, T. Fujikawa, Z. Su, J. Katto, "TCP-Fusion: A Hybrid
 * Congestion Control Algorithm for High-speed Networks", PFLDnet 2007, §II (and the PFLDnet
 * slides), as a BPF struct_ops congestion control. Windows in packets (Q16 fixed point).
 *
 * Rules (paper section → where below):
 *   §II      two windows: a Reno window reno_cwnd (+1 MSS per RTT, halved on loss) and the Fusion
 *            window; "TCP-Fusion adopts either big one": cwnd = reno_cwnd if cwnd < reno_cwnd.
 *            An ACK of N packets adds N/reno_cwnd to reno_cwnd (+1 per RTT).  → fusion_cong_avoid
 *   §II-B    diff = cwnd·(RTT − RTTmin)/RTT packets queued; three phases per ACK:
 *              diff < α      → cwnd += W_inc/cwnd          (increase)
 *              diff > 3α     → cwnd += (α − diff)/cwnd      (decrease)
 *              otherwise     → hold                         (steady)
 *            per packet acknowledged (an ACK of N packets applies N times the per-ACK step: the
 *            paper's per-ACK rule assumes one ACK per packet; a delayed-ACK receiver would
 *            otherwise halve every rate).
 *            RTT: the smallest sample of the last completed round (Vegas' filter against delayed
 *            ACKs; the paper's "RTT" is unspecified; the replay's default rtt_source=round_min);
 *            a round ends on the first ACK at or above the snd_nxt of its start (and beyond the
 *            ACK that started it), checked on every ACK (in_ack_event), in every state.
 *            RTTmin: the smallest sample so far. Until a round has completed the Fusion window
 *            holds (only the Reno floor grows).
 *   §II-C    α = cwnd·Dmin/RTT with Dmin = 4 ms ("we set it to 4ms based on our implementation
 *            experiments"); W_inc = G = B·Dmin'/(8·packet_size) with Dmin' = 1 ms ("W_inc =
 *            B/12Mbps" for 1500-byte packets), B the bandwidth estimate of the ACK stream
 *            (TCPW-BE; here the Westwood+ estimator of westwood.h, in payload bytes, so W_inc =
 *            B_payload·1 ms/MSS = packets of 1 ms at the bottleneck), at least 1 packet.
 *   §II-A    on a loss: cwnd = max(RTTmin/RTT·cwnd, cwnd/2), RTT the sample right before the loss
 *            (TCPW-RE with the 1/2 floor); reno_cwnd = max(reno_cwnd/2, 2); and the window is
 *            never below the halved Reno window (§II: the larger one).   → fusion_ssthresh
 *   RTO      the paper is silent: Reno's behaviour for both windows (ssthresh = cwnd/2, both
 *            windows restart from the kernel's loss window).           → fusion_cwnd_event
 *   —        the decrease phase stays in congestion avoidance: when it takes cwnd below ssthresh,
 *            ssthresh follows it (as Linux tcp_vegas), since TCP-Fusion has no slow start in the
 *            middle of congestion avoidance.
 *
 * Linux core around it: growth only while cwnd-limited (tcp_is_cwnd_limited), Reno's
 * tcp_slow_start before the first loss (both windows = cwnd), PRR towards ssthresh in recovery,
 * undo restores both windows.
 *
 * Fixed point: windows, diff, α and W_inc in Q16 (1/65536 packet); each per-ACK step truncates
 * < 2^-16 packet; RTTs in µs; W_inc from B in bytes per jiffy (westwood.h: ±1 jiffy per 50 ms
 * sample, ≈ ±8 % per sample, filtered) — it matters only in the increase phase; snd_cwnd = ⌊cwnd⌋.
 *
 * Signals: EV_ACK at the first growth opportunity of every round and whenever the phase changes
 * (phase 0 slow start, 1 increase, 2 steady, 3 decrease, 4 no round yet), EV_LOSS (phase 5: diff = RTTmin/RTT·cwnd,
 * alpha = cwnd/2, snd_cwnd = the new ssthresh), EV_UNDO:
 * hscc-signals: rtt_us rtt_min_us diff:Q16 alpha:Q16 w_inc:Q16 phase reno_cwnd:Q16 cwnd:Q16 bw_Bpj snd_cwnd
 *   bw_Bpj: Westwood+ B in payload bytes per jiffy (× HZ × 8 = bit/s)
 */
#include "westwood.h"

#define FUSION_DMIN_US 4000  /* §II-C: Dmin of α */
#define FUSION_DWINC_US 1000 /* §II-C: Dmin of W_inc (1 ms) */

enum { PH_SLOW_START = 0, PH_INCREASE = 1, PH_STEADY = 2, PH_DECREASE = 3, PH_NO_RTT = 4, PH_LOSS = 5 };

struct fusion {
	struct westwood w; /* B for W_inc */
	__u32 cwnd_q;	   /* Fusion window = the sending window (Q16 packets) */
	__u32 reno_q;	   /* Reno window (Q16) */
	__u32 rtt_min;	   /* µs */
	__u32 round_min;   /* smallest sample of the current round, µs */
	__u32 rtt_round;   /* smallest sample of the last completed round (0: none yet) */
	__u32 beg_snd_nxt; /* the round ends with the first ACK at or above this */
	__u32 start_una;   /* ... and beyond the ACK that started it */
	__u32 last_rtt;	   /* the last sample (the RTT "right before the loss") */
	__u32 last_win;	   /* snd_cwnd as this program last set it */
	__u32 prior_cwnd_q, prior_reno_q; /* before the last reduction (undo) */
	__u8 last_phase;  /* phase of the last signal line */
	__u8 round_ended; /* a round ended since the last signal line */
	__u8 started;	  /* the first round has begun (at the first ACK) */
};
_Static_assert(sizeof(struct fusion) <= ICSK_CA_PRIV_BYTES, "fusion state too large");

static __always_inline void fusion_apply(struct sock *sk, struct fusion *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 w = ca->cwnd_q >> Q16;

	if (w < 2)
		w = 2;
	tp->snd_cwnd = min(w, tp->snd_cwnd_clamp);
	ca->last_win = tp->snd_cwnd;
}

/* the core changed snd_cwnd (RTO, undo, restart, PRR below ssthresh): follow it */
static __always_inline void fusion_resync(struct sock *sk, struct fusion *ca)
{
	__u32 w = tcp_sk(sk)->snd_cwnd;

	if (w == ca->last_win)
		return;
	ca->cwnd_q = w << Q16;
	if (ca->reno_q > ca->cwnd_q)
		ca->reno_q = ca->cwnd_q;
	ca->last_win = w;
}

/* W_inc = max(B·1 ms/MSS, 1) in Q16 */
static __always_inline __u64 fusion_w_inc_q(const struct sock *sk, const struct fusion *ca)
{
	__u64 w = ((__u64)ca->w.bw_est * HSCC_HZ * FUSION_DWINC_US << Q16) / (USEC_PER_SEC * (__u64)tcp_sk(sk)->mss_cache);

	return max(w, ONE_Q16);
}

SEC("struct_ops")
void BPF_PROG(fusion_init, struct sock *sk)
{
	struct fusion *ca = inet_csk_ca(sk);

	westwood_est_init(sk, &ca->w);
	ca->cwnd_q = ca->reno_q = tcp_sk(sk)->snd_cwnd << Q16;
	ca->prior_cwnd_q = ca->prior_reno_q = ca->cwnd_q;
	ca->rtt_min = 0x7fffffff;
	ca->round_min = 0x7fffffff;
	ca->rtt_round = 0;
	ca->last_rtt = 0;
	ca->beg_snd_nxt = tcp_sk(sk)->snd_nxt;
	ca->start_una = tcp_sk(sk)->snd_una;
	ca->started = 0;
	ca->last_win = tcp_sk(sk)->snd_cwnd;
	ca->last_phase = 0xff;
	ca->round_ended = 1;
	SIG(EV_INIT, "%u", ca->cwnd_q);
}

SEC("struct_ops")
void BPF_PROG(fusion_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct fusion *ca = inet_csk_ca(sk);
	__u32 rtt;

	westwood_est_rtt(&ca->w, sample);
	if (sample->rtt_us <= 0)
		return;
	rtt = sample->rtt_us;
	ca->last_rtt = rtt;
	ca->rtt_min = min(ca->rtt_min, rtt);
	ca->round_min = min(ca->round_min, rtt);
}

SEC("struct_ops")
void BPF_PROG(fusion_ack, struct sock *sk, __u32 ack_flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fusion *ca = inet_csk_ca(sk);
	__u32 bk = 0;

	westwood_est_ack(sk, &ca->w, ack_flags, &bk);
	if (!ca->started) {
		/* the first ACK of data starts round 0 (its own sample belongs to it) */
		ca->started = 1;
		ca->beg_snd_nxt = tp->snd_nxt;
		ca->start_una = tp->snd_una;
	} else if (!before(tp->snd_una, ca->beg_snd_nxt) && after(tp->snd_una, ca->start_una)) {
		/* a round ended: its smallest sample is the RTT of the next round's decisions */
		if (ca->round_min != 0x7fffffff)
			ca->rtt_round = ca->round_min;
		ca->round_min = 0x7fffffff;
		ca->beg_snd_nxt = tp->snd_nxt;
		ca->start_una = tp->snd_una;
		ca->round_ended = 1;
	}
}

SEC("struct_ops")
void BPF_PROG(fusion_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fusion *ca = inet_csk_ca(sk);
	__u64 cwnd_q, diff_q = 0, alpha_q = 0, w_inc_q = 0;
	__u32 rtt = 0, phase;

	fusion_resync(sk, ca);
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		ca->cwnd_q = ca->reno_q = tp->snd_cwnd << Q16;
		ca->last_win = tp->snd_cwnd;
		phase = PH_SLOW_START;
		goto out;
	}
	/* §II: the Reno window, +1 per RTT */
	ca->reno_q += ((__u64)acked << (2 * Q16)) / ca->reno_q;
	cwnd_q = ca->cwnd_q;
	rtt = ca->rtt_round;
	w_inc_q = fusion_w_inc_q(sk, ca);
	if (!rtt) {
		phase = PH_NO_RTT;
	} else {
		/* §II-B diff = cwnd·(RTT − RTTmin)/RTT; §II-C α = cwnd·Dmin/RTT */
		diff_q = cwnd_q * (rtt - ca->rtt_min) / rtt;
		alpha_q = cwnd_q * FUSION_DMIN_US / rtt;
		if (diff_q < alpha_q) {
			cwnd_q += (w_inc_q * acked << Q16) / cwnd_q;
			phase = PH_INCREASE;
		} else if (diff_q > 3 * alpha_q) {
			__u64 dec = ((diff_q - alpha_q) * acked << Q16) / cwnd_q;

			cwnd_q = cwnd_q > dec ? cwnd_q - dec : 0;
			phase = PH_DECREASE;
		} else {
			phase = PH_STEADY;
		}
	}
	/* §II: cwnd = reno_cwnd if cwnd < reno_cwnd */
	if (cwnd_q < ca->reno_q)
		cwnd_q = ca->reno_q;
	ca->cwnd_q = cwnd_q;
	fusion_apply(sk, ca);
	if (tp->snd_cwnd < tp->snd_ssthresh)
		tp->snd_ssthresh = tp->snd_cwnd;
out:
	if (phase == ca->last_phase && !ca->round_ended)
		return;
	ca->last_phase = phase;
	ca->round_ended = 0;
	SIG(EV_ACK, "%u %u %u %u %u %u %u %u %u %u", rtt, ca->rtt_min, (__u32)diff_q, (__u32)alpha_q, (__u32)w_inc_q,
	    phase, ca->reno_q, ca->cwnd_q, ca->w.bw_est, tp->snd_cwnd);
}

/* §II-A: cwnd = max(RTTmin/RTT·cwnd, cwnd/2); reno_cwnd halved; never below the halved Reno */
SEC("struct_ops")
__u32 BPF_PROG(fusion_ssthresh, struct sock *sk)
{
	struct fusion *ca = inet_csk_ca(sk);
	__u64 cwnd_q, west_q = 0, half_q;
	__u32 rtt = ca->last_rtt, ss;

	fusion_resync(sk, ca);
	ca->prior_cwnd_q = ca->cwnd_q;
	ca->prior_reno_q = ca->reno_q;
	cwnd_q = ca->cwnd_q;
	if (rtt && ca->rtt_min <= rtt)
		west_q = cwnd_q * ca->rtt_min / rtt;
	half_q = cwnd_q >> 1;
	cwnd_q = max(west_q, half_q);
	ca->reno_q = max(ca->reno_q >> 1, 2U << Q16);
	if (cwnd_q < ca->reno_q)
		cwnd_q = ca->reno_q;
	ca->cwnd_q = cwnd_q;
	ss = max((__u32)(cwnd_q >> Q16), 2U);
	ca->last_win = ss; /* recovery ends at cwnd = ssthresh */
	ca->last_phase = PH_LOSS;
	SIG(EV_LOSS, "%u %u %u %u %u %u %u %u %u %u", rtt, ca->rtt_min, (__u32)west_q, (__u32)half_q,
	    (__u32)fusion_w_inc_q(sk, ca), PH_LOSS, ca->reno_q, ca->cwnd_q, ca->w.bw_est, ss);
	return ss;
}

SEC("struct_ops")
void BPF_PROG(fusion_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fusion *ca = inet_csk_ca(sk);

	if (ev != CA_EVENT_LOSS)
		return;
	/* RTO: Reno (tcp_reno_ssthresh of the window before the timeout); both windows restart from
	 * the kernel's loss window (fusion_resync on the next ACK) */
	tp->snd_ssthresh = max(tp->prior_cwnd >> 1, 2U);
	ca->reno_q = ca->cwnd_q = 1U << Q16;
	ca->last_win = 0;
}

SEC("struct_ops")
__u32 BPF_PROG(fusion_undo_cwnd, struct sock *sk)
{
	struct fusion *ca = inet_csk_ca(sk);
	__u32 w = tcp_reno_undo_cwnd(sk);

	ca->cwnd_q = ca->prior_cwnd_q;
	ca->reno_q = ca->prior_reno_q;
	if (w != (ca->cwnd_q >> Q16))
		ca->cwnd_q = w << Q16;
	if (ca->reno_q > ca->cwnd_q)
		ca->reno_q = ca->cwnd_q;
	ca->last_win = w;
	SIG(EV_UNDO, "%u %u %u %u %u %u %u %u %u %u", ca->last_rtt, ca->rtt_min, 0, 0, 0, PH_LOSS, ca->reno_q, ca->cwnd_q,
	    ca->w.bw_est, w);
	return w;
}

SEC(".struct_ops")
struct tcp_congestion_ops bpf_fusion = {
	.init = (void *)fusion_init,
	.ssthresh = (void *)fusion_ssthresh,
	.undo_cwnd = (void *)fusion_undo_cwnd,
	.cong_avoid = (void *)fusion_cong_avoid,
	.pkts_acked = (void *)fusion_pkts_acked,
	.in_ack_event = (void *)fusion_ack,
	.cwnd_event = (void *)fusion_cwnd_event,
	.name = "bpf_fusion",
};
