// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_westwood: TCP Westwood+ as Linux implements it (net/ipv4/tcp_westwood.c of kernel 6.x), as a
 * BPF struct_ops congestion control (the kernel of the testbed is built without tcp_westwood).
 *
 * Westwood+ (Mascolo, Casetti, Gerla et al., "TCP Westwood: bandwidth estimation for TCP",
 * Mobicom 2001; Grieco & Mascolo, "Performance evaluation and comparison of Westwood+, New Reno
 * and Vegas TCP congestion control", CCR 34(2) 2004): Reno's probing (slow start and additive
 * increase), and after a congestion episode cwnd = ssthresh = B·RTTmin, where B is an end-to-end
 * estimate of the bandwidth from the rate of returning ACKs: the bytes acknowledged over one RTT
 * (at least 50 ms), low-pass filtered twice with gain 7/8 (the "+" of Westwood+: one sample per
 * RTT instead of per ACK).
 *
 * Rules, each as tcp_westwood.c states it:
 *   - in_ack_event: count the acknowledged bytes (bk) — snd_una's advance on the fast path,
 *     westwood_acked_count() on the slow path (a duplicate ACK counts one MSS, credited back when
 *     the cumulative ACK moves);
 *   - once more than max(RTT, 50 ms) has passed since the window opened: sample bk/Δt, filter it
 *     (first sample fills both filters), reopen the window;
 *   - RTTmin = min of the per-ACK RTT samples (reset to the next sample after an RTO);
 *   - on entering recovery/CWR: Reno's ssthresh (cwnd/2) — the window is deflated by PRR;
 *   - CA_EVENT_COMPLETE_CWR (recovery/CWR ends): cwnd = ssthresh = max(B·RTTmin/MSS, 2);
 *   - CA_EVENT_LOSS (RTO): ssthresh = max(B·RTTmin/MSS, 2);
 *   - growth: tcp_reno_cong_avoid; undo: tcp_reno_undo_cwnd.
 *
 * Fixed point (as the kernel): time is counted in jiffies (1/HZ s; HZ = 250 on the reference
 * kernel, 4 ms). RTT = usecs_to_jiffies(rtt_us) rounds up, so RTTmin is 0-4 ms above the true
 * minimum (on a 40 ms path up to +10 %, which B·RTTmin inherits); the estimator's own losses are
 * in westwood.h (Δt ±1 jiffy per sample, B truncated to bytes per jiffy); B·RTTmin/MSS is
 * truncated to whole packets (< 1 packet).
 *
 * Signals: EV_ROUND at each bandwidth sample, EV_CWND_EVENT at COMPLETE_CWR (event_code 2) and
 * LOSS (3):
 * hscc-signals: event_code bk delta_j bw_ns_est bw_est rtt_j rtt_min_j bw_rttmin snd_cwnd ssthresh
 *   bw_* in bytes per jiffy (× HZ × 8 = bit/s); rtt_j, rtt_min_j, delta_j in jiffies;
 *   bw_rttmin = max(bw_est·rtt_min_j/MSS, 2) packets; event_code: 0 bandwidth sample,
 *   2 COMPLETE_CWR (cwnd = ssthresh = bw_rttmin), 3 LOSS (ssthresh = bw_rttmin)
 */
#include "westwood.h"

_Static_assert(sizeof(struct westwood) <= ICSK_CA_PRIV_BYTES, "westwood state too large");

SEC("struct_ops")
void BPF_PROG(westwood_init, struct sock *sk)
{
	struct westwood *w = inet_csk_ca(sk);

	westwood_est_init(sk, w);
	SIG(EV_INIT, "%u", w->rtt_min);
}

/* B·RTTmin in packets, at least 2 (tcp_westwood_bw_rttmin) */
static __always_inline __u32 westwood_bw_rttmin(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct westwood *w = inet_csk_ca(sk);

	return max((w->bw_est * w->rtt_min) / tp->mss_cache, 2U);
}

SEC("struct_ops")
void BPF_PROG(westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	westwood_est_rtt(inet_csk_ca(sk), sample);
}

SEC("struct_ops")
void BPF_PROG(westwood_ack, struct sock *sk, __u32 ack_flags)
{
	struct westwood *w = inet_csk_ca(sk);
	__u32 bk = 0;
	__s32 delta = westwood_est_ack(sk, w, ack_flags, &bk);

	if (delta)
		SIG(EV_ROUND, "0 %u %d %u %u %u %u %u %u %u", bk, delta, w->bw_ns_est, w->bw_est, w->rtt, w->rtt_min,
		    westwood_bw_rttmin(sk), tcp_sk(sk)->snd_cwnd, tcp_sk(sk)->snd_ssthresh);
}

SEC("struct_ops")
void BPF_PROG(westwood_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = inet_csk_ca(sk);

	switch (event) {
	case CA_EVENT_COMPLETE_CWR:
		tp->snd_cwnd = tp->snd_ssthresh = westwood_bw_rttmin(sk);
		break;
	case CA_EVENT_LOSS:
		tp->snd_ssthresh = westwood_bw_rttmin(sk);
		/* update RTTmin when the next ACK arrives */
		w->reset_rtt_min = 1;
		break;
	default:
		return;
	}
	SIG(EV_CWND_EVENT, "%u %u %d %u %u %u %u %u %u %u", (__u32)event, w->bk, 0, w->bw_ns_est, w->bw_est, w->rtt,
	    w->rtt_min, westwood_bw_rttmin(sk), tp->snd_cwnd, tp->snd_ssthresh);
}

SEC("struct_ops")
__u32 BPF_PROG(westwood_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(westwood_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops bpf_westwood = {
	.init = (void *)westwood_init,
	.ssthresh = (void *)westwood_ssthresh,
	.cong_avoid = (void *)westwood_cong_avoid,
	.undo_cwnd = (void *)westwood_undo_cwnd,
	.cwnd_event = (void *)westwood_event,
	.in_ack_event = (void *)westwood_ack,
	.pkts_acked = (void *)westwood_pkts_acked,
	.name = "bpf_westwood",
};
