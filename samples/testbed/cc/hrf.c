// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_hrf and the HRF paper's comparison rows: K. Ogura, Y. Nemoto, Z. Su, J. Katto, "A New TCP
 * Congestion Control Supporting RTT-Fairness", IEICE Trans. Inf. & Syst. E95-D(2), 2012, §2-§5,
 * as BPF struct_ops congestion controls. One file, built once per row (bpfcc.py passes -D):
 *
 *   sender            HRF_DEC  HRF_M1  HRF_M2   paper (§5.2 notation Dec + M1 + M2)
 *   bpf_hrf           W        CR      CI       HRF = W+CR+CI (§4 eqs. 15-17)
 *   bpf_hrf_cr        RENO     CR      CR       CR (§2.3 eqs. 3-4)
 *   bpf_hrf_ci        RENO     CI      CI       CI (§2.4 eq. 5, halving as eq. 4)
 *   bpf_hrf_wcrreno   W        CR      RENO     W+CR+Reno (§5.2)
 *   bpf_hrf_wcrcr     W        CR      CR       W+CR+CR (§5.2)
 * (the Reno row is the kernel's own reno).
 *
 * Rules:
 *   §2.3 eq. (3)  CR: cwnd += k·RTT² per RTT, k = 1/RTTref² (eq. 7) → (RTT/RTTref)² per RTT;
 *   §2.4 eq. (5)  CI: cwnd += k′·RTT per RTT, k′ = 1/(RTTref + s/B) (eq. 14; s/B the queuing
 *                 delay, observed as RTT − RTTmin; without a queue eq. 8, k′ = 1/RTTref);
 *   Reno          +1 per RTT (Table 1);
 *   §4 eq. (15)   M1 when RTT = RTTmin (Model I, vacant link), eq. (16) M2 when RTT > RTTmin
 *                 (Model II, buffering); "RTT = RTTmin" is read as RTT ≤ RTTmin + 1 ms (the
 *                 timer granularity of a measured RTT; the replay's tol = 1 ms);
 *   per ACK       the per-RTT amount x is spread over the window: cwnd += x·N/cwnd for an ACK of
 *                 N packets (one window of ACKs is one RTT);
 *   RTT           the latest sample ("switches two modes according to observed RTT values"; the
 *                 replay's rtt_source=last); RTTmin the smallest sample so far;
 *   RTTref        40 ms: §5 "We set parameters k and k′ ... calculated by assuming TCP-Reno of
 *                 RTT = 40 [ms]";
 *   eq. (17)/(2)  W: on a loss (3 duplicate ACKs, §2) cwnd = max(RTTmin/RTT·cwnd, cwnd/2), RTT the
 *                 sample just before the loss; eq. (4) RENO: cwnd = cwnd/2; at least 2 packets;
 *   RTO           not a "window decrement phase" of the paper (§2 defines it by 3 duplicate ACKs):
 *                 Linux Reno (ssthresh = cwnd/2, slow start from the loss window).
 * Slow start is Reno's (tcp_slow_start), growth only while cwnd-limited, PRR in recovery.
 *
 * Fixed point: window and per-RTT increment in Q16 (1/65536 packet); CR's (RTT/RTTref)² and CI's
 * RTT/(RTTref + qdelay) are exact to 2^-16 (µs RTTs); each per-ACK step truncates < 2^-16
 * packet; snd_cwnd = ⌊cwnd⌋.
 *
 * Signals: EV_ACK at the first growth of every round and whenever the mode changes (mode 0 slow
 * start, 1 CR, 2 CI, 3 Reno), EV_LOSS (mode 4,
 * inc_per_rtt = RTTmin/RTT in Q16, snd_cwnd = the new ssthresh), EV_UNDO (mode 5):
 * hscc-signals: mode rtt_us rtt_min_us inc_per_rtt:Q16 cwnd:Q16 snd_cwnd ssthresh
 */
#include "hscc_cc.h"

#define HRF_MODE_CR 1
#define HRF_MODE_CI 2
#define HRF_MODE_RENO 3
#define HRF_DEC_W 1
#define HRF_DEC_RENO 2
#define _HRF_MODE(x) HRF_MODE_##x
#define HRF_MODE(x) _HRF_MODE(x)
#define _HRF_DECR(x) HRF_DEC_##x
#define HRF_DECR(x) _HRF_DECR(x)
#define _STR(x) #x
#define STR(x) _STR(x)

#ifndef HRF_M1
#define HRF_M1 CR
#endif
#ifndef HRF_M2
#define HRF_M2 CI
#endif
#ifndef HRF_DEC
#define HRF_DEC W
#endif
#ifndef CC_VAR
#define CC_VAR bpf_hrf
#endif

#define M1 HRF_MODE(HRF_M1)
#define M2 HRF_MODE(HRF_M2)
#define DEC HRF_DECR(HRF_DEC)

#define HRF_RTT_REF_US 40000ULL /* §5: k, k′ of a Reno flow with RTT 40 ms */
#define HRF_TOL_US 1000		/* a queue exists when RTT > RTTmin + 1 ms */

struct hrf {
	__u32 cwnd_q;	/* window (Q16 packets) */
	__u32 rtt_min;	/* µs */
	__u32 last_rtt; /* the latest sample, µs */
	__u32 last_win; /* snd_cwnd as this program last set it */
	__u32 prior_cwnd_q;
	__u32 beg_snd_nxt; /* a round ends with the first ACK beyond this (signal lines only) */
	__u8 last_mode;	   /* mode of the last signal line */
};
_Static_assert(sizeof(struct hrf) <= ICSK_CA_PRIV_BYTES, "hrf state too large");

static __always_inline void hrf_apply(struct sock *sk, struct hrf *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 w = ca->cwnd_q >> Q16;

	if (w < 2)
		w = 2;
	tp->snd_cwnd = min(w, tp->snd_cwnd_clamp);
	ca->last_win = tp->snd_cwnd;
}

static __always_inline void hrf_resync(struct sock *sk, struct hrf *ca)
{
	__u32 w = tcp_sk(sk)->snd_cwnd;

	if (w != ca->last_win) {
		ca->cwnd_q = w << Q16;
		ca->last_win = w;
	}
}

SEC("struct_ops")
void BPF_PROG(hrf_init, struct sock *sk)
{
	struct hrf *ca = inet_csk_ca(sk);

	ca->cwnd_q = ca->prior_cwnd_q = tcp_sk(sk)->snd_cwnd << Q16;
	ca->rtt_min = 0x7fffffff;
	ca->last_rtt = 0;
	ca->last_win = tcp_sk(sk)->snd_cwnd;
	ca->beg_snd_nxt = tcp_sk(sk)->snd_nxt;
	ca->last_mode = 0xff;
	SIG(EV_INIT, "%u", M1 * 16 + M2 * 4 + DEC);
}

SEC("struct_ops")
void BPF_PROG(hrf_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct hrf *ca = inet_csk_ca(sk);

	if (sample->rtt_us <= 0)
		return;
	ca->last_rtt = sample->rtt_us;
	ca->rtt_min = min(ca->rtt_min, (__u32)sample->rtt_us);
}

/* Table 1: increment per RTT of a mode, Q16 */
static __always_inline __u64 hrf_inc_q(__u32 mode, __u64 rtt, __u64 qdelay)
{
	if (mode == HRF_MODE_CR) /* k·RTT² = (RTT/RTTref)² */
		return (rtt * rtt << Q16) / (HRF_RTT_REF_US * HRF_RTT_REF_US);
	if (mode == HRF_MODE_CI) /* k′·RTT = RTT/(RTTref + qdelay) */
		return (rtt << Q16) / (HRF_RTT_REF_US + qdelay);
	return ONE_Q16;
}

SEC("struct_ops")
void BPF_PROG(hrf_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hrf *ca = inet_csk_ca(sk);
	__u32 rtt = ca->last_rtt, mode;
	__u64 inc_q = 0;
	bool round_end = after(ack, ca->beg_snd_nxt);

	if (round_end)
		ca->beg_snd_nxt = tp->snd_nxt;
	hrf_resync(sk, ca);
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		ca->cwnd_q = tp->snd_cwnd << Q16;
		ca->last_win = tp->snd_cwnd;
		mode = 0;
	} else {
		if (!rtt) {
			mode = HRF_MODE_RENO; /* no sample yet */
		} else if (rtt > ca->rtt_min + HRF_TOL_US) {
			mode = M2; /* eq. (16): packets are buffered */
		} else {
			mode = M1; /* eq. (15): vacant link */
		}
		inc_q = hrf_inc_q(mode, rtt, rtt > ca->rtt_min ? rtt - ca->rtt_min : 0);
		ca->cwnd_q += (inc_q * acked << Q16) / ca->cwnd_q;
		hrf_apply(sk, ca);
	}
	if (mode == ca->last_mode && !round_end)
		return;
	ca->last_mode = mode;
	SIG(EV_ACK, "%u %u %u %u %u %u %u", mode, rtt, ca->rtt_min, (__u32)inc_q, ca->cwnd_q, tp->snd_cwnd,
	    tp->snd_ssthresh);
}

SEC("struct_ops")
__u32 BPF_PROG(hrf_ssthresh, struct sock *sk)
{
	struct hrf *ca = inet_csk_ca(sk);
	__u64 w_q, half_q, ratio_q = ONE_Q16 >> 1;
	__u32 rtt = ca->last_rtt, ss;

	hrf_resync(sk, ca);
	ca->prior_cwnd_q = ca->cwnd_q;
	w_q = ca->cwnd_q;
	half_q = w_q >> 1;
#if DEC == HRF_DEC_W
	/* eq. (17): max(RTTmin/RTT·cwnd, cwnd/2) */
	if (rtt && ca->rtt_min <= rtt) {
		__u64 west_q = w_q * ca->rtt_min / rtt;

		ratio_q = ((__u64)ca->rtt_min << Q16) / rtt;
		if (west_q > half_q)
			half_q = west_q;
	}
#endif
	ca->cwnd_q = max(half_q, 2ULL << Q16);
	ss = ca->cwnd_q >> Q16;
	ca->last_win = ss; /* recovery ends at cwnd = ssthresh */
	ca->last_mode = 4;
	SIG(EV_LOSS, "%u %u %u %u %u %u %u", 4, rtt, ca->rtt_min, (__u32)ratio_q, ca->cwnd_q, ss, ss);
	return ss;
}

SEC("struct_ops")
void BPF_PROG(hrf_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hrf *ca = inet_csk_ca(sk);

	if (ev != CA_EVENT_LOSS)
		return;
	/* RTO: Linux Reno's ssthresh of the window before the timeout */
	tp->snd_ssthresh = max(tp->prior_cwnd >> 1, 2U);
	ca->last_win = 0; /* re-derive the window from the kernel's loss window */
}

SEC("struct_ops")
__u32 BPF_PROG(hrf_undo_cwnd, struct sock *sk)
{
	struct hrf *ca = inet_csk_ca(sk);
	__u32 w = tcp_reno_undo_cwnd(sk);

	ca->cwnd_q = ca->prior_cwnd_q;
	if (w != (ca->cwnd_q >> Q16))
		ca->cwnd_q = w << Q16;
	ca->last_win = w;
	SIG(EV_UNDO, "%u %u %u %u %u %u %u", 5, ca->last_rtt, ca->rtt_min, 0, ca->cwnd_q, w, tcp_sk(sk)->snd_ssthresh);
	return w;
}

SEC(".struct_ops")
struct tcp_congestion_ops CC_VAR = {
	.init = (void *)hrf_init,
	.ssthresh = (void *)hrf_ssthresh,
	.undo_cwnd = (void *)hrf_undo_cwnd,
	.cong_avoid = (void *)hrf_cong_avoid,
	.pkts_acked = (void *)hrf_pkts_acked,
	.cwnd_event = (void *)hrf_cwnd_event,
	.name = STR(CC_VAR),
};
