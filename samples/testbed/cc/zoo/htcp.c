// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_htcp: H-TCP, ported to a BPF struct_ops congestion control from Linux
 * net/ipv4/tcp_htcp.c (kernel 6.x). Part of the open-set zoo (no replay in hscc-trace).
 * Paper: R. N. Shorten, D. J. Leith, "H-TCP: TCP for high-speed and long-distance networks",
 * PFLDnet 2004; D. Leith, R. Shorten, "H-TCP: TCP congestion control for high bandwidth-delay
 * product paths", IETF draft, 2008.
 *
 * Rules as the module (times in jiffies, as it counts them):
 *   - α grows with the time Δ since the last congestion event: 1 for Δ ≤ 1 s, then
 *     1 + 10(Δ−1) + ((Δ−1)/2)² (Δ in s); with RTT scaling α is multiplied by minRTT/100 ms,
 *     the factor clamped to [0.5, 10]; α = 2·factor·(1 − β) (Q7 fixed point);
 *   - congestion avoidance: +α/cwnd per ACK, done as one packet when snd_cwnd_cnt·α ≥ cwnd
 *     (snd_cwnd_cnt counts packets acknowledged); α is recomputed at each increment;
 *   - β = minRTT/maxRTT clamped to [0.5, 0.8] (adaptive backoff) once a congestion event was
 *     seen with minRTT > 10 ms, else 0.5; the bandwidth switch resets β to 0.5 when the
 *     throughput estimate maxB moved by more than 20 % since the last event;
 *   - ssthresh = cwnd·β (at least 2); maxRTT fades 5 % towards minRTT at every event;
 *   - a throughput estimate Bi (packets/s, EWMA 3/4) over at least one minRTT, in Open/Disorder;
 *   - undo restores the time of the last event, maxRTT and old_maxB; then Reno's undo.
 *
 * Departures forced by BPF: jiffies come from bpf_jiffies64() and HZ from the build
 * (-DHSCC_HZ); BPF may not write snd_cwnd_clamp, which the module only compares against.
 *
 * Signals: EV_LOSS at every ssthresh call (after the parameter update):
 * hscc-signals: snd_cwnd ssthresh alpha_q7 beta_q7 min_rtt_j max_rtt_j max_b cong_time_j
 */
#include "hscc_cc.h"

#define HTCP_ALPHA_BASE (1 << 7) /* 1.0 in Q7 */
#define HTCP_BETA_MIN (1 << 6)	 /* 0.5 */
#define HTCP_BETA_MAX 102	 /* 0.8 */
#define HTCP_RTT_SCALING 1
#define HTCP_BW_SWITCH 1
/* include/linux/jiffies.h: ms → jiffies, rounded up */
#define HTCP_MS_TO_J(ms) (((ms) * HSCC_HZ + 999) / 1000)

struct zhtcp {
	__u32 alpha; /* Q7 */
	__u8 beta;   /* Q7 */
	__u8 modeswitch;
	__u16 pkts_acked;
	__u32 packetcount;
	__u32 min_rtt; /* jiffies */
	__u32 max_rtt;
	__u32 last_cong;
	__u32 undo_last_cong;
	__u32 undo_max_rtt;
	__u32 undo_old_maxb;
	__u32 minb;
	__u32 maxb;
	__u32 old_maxb;
	__u32 bi;
	__u32 lasttime;
};
_Static_assert(sizeof(struct zhtcp) <= ICSK_CA_PRIV_BYTES, "htcp state too large");

static __always_inline __u32 jiffies32(void)
{
	return (__u32)bpf_jiffies64();
}

static __always_inline __u32 htcp_cong_time(const struct zhtcp *ca)
{
	return jiffies32() - ca->last_cong;
}

static __always_inline __u32 htcp_ccount(const struct zhtcp *ca)
{
	return htcp_cong_time(ca) / ca->min_rtt;
}

/* include/net/tcp.h between(): seq2 <= seq1 <= seq3 (mod 2^32) */
static __always_inline bool between(__u32 seq1, __u32 seq2, __u32 seq3)
{
	return seq3 - seq2 >= seq1 - seq2;
}

SEC("struct_ops")
void BPF_PROG(zhtcp_init, struct sock *sk)
{
	struct zhtcp *ca = inet_csk_ca(sk);

	__builtin_memset(ca, 0, sizeof(*ca));
	ca->alpha = HTCP_ALPHA_BASE;
	ca->beta = HTCP_BETA_MIN;
	ca->pkts_acked = 1;
	ca->last_cong = jiffies32();
	SIG(EV_INIT, "%u", HSCC_HZ);
}

SEC("struct_ops")
__u32 BPF_PROG(zhtcp_undo_cwnd, struct sock *sk)
{
	struct zhtcp *ca = inet_csk_ca(sk);

	if (ca->undo_last_cong) {
		ca->last_cong = ca->undo_last_cong;
		ca->max_rtt = ca->undo_max_rtt;
		ca->old_maxb = ca->undo_old_maxb;
		ca->undo_last_cong = 0;
	}
	return tcp_reno_undo_cwnd(sk);
}

static __always_inline void htcp_measure_rtt(struct sock *sk, struct zhtcp *ca, __u32 srtt)
{
	if (ca->min_rtt > srtt || !ca->min_rtt)
		ca->min_rtt = srtt;
	if (hscc_ca_state(sk) == TCP_CA_Open) {
		if (ca->max_rtt < ca->min_rtt)
			ca->max_rtt = ca->min_rtt;
		/* a larger maxRTT only in steps of at most 20 ms (spurious samples) */
		if (ca->max_rtt < srtt && srtt <= ca->max_rtt + HTCP_MS_TO_J(20))
			ca->max_rtt = srtt;
	}
}

SEC("struct_ops")
void BPF_PROG(zhtcp_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zhtcp *ca = inet_csk_ca(sk);
	__u32 now = jiffies32();
	__u8 st = hscc_ca_state(sk);

	if (st == TCP_CA_Open)
		ca->pkts_acked = sample->pkts_acked;
	if (sample->rtt_us > 0)
		htcp_measure_rtt(sk, ca, usecs_to_jiffies(sample->rtt_us));
	if (!HTCP_BW_SWITCH)
		return;
	if (st != TCP_CA_Open && st != TCP_CA_Disorder) {
		ca->packetcount = 0;
		ca->lasttime = now;
		return;
	}
	ca->packetcount += sample->pkts_acked;
	if (ca->packetcount >= tp->snd_cwnd - ((ca->alpha >> 7) ?: 1) && now - ca->lasttime >= ca->min_rtt &&
	    ca->min_rtt > 0) {
		__u32 cur_bi = ca->packetcount * HSCC_HZ / (now - ca->lasttime);

		if (htcp_ccount(ca) <= 3) { /* just after a backoff */
			ca->minb = ca->maxb = ca->bi = cur_bi;
		} else {
			ca->bi = (3 * ca->bi + cur_bi) / 4;
			if (ca->bi > ca->maxb)
				ca->maxb = ca->bi;
			if (ca->minb > ca->maxb)
				ca->minb = ca->maxb;
		}
		ca->packetcount = 0;
		ca->lasttime = now;
	}
}

static __always_inline void htcp_beta_update(struct zhtcp *ca, __u32 min_rtt, __u32 max_rtt)
{
	if (HTCP_BW_SWITCH) {
		__u32 maxb = ca->maxb, old_maxb = ca->old_maxb;

		ca->old_maxb = ca->maxb;
		if (!between(5 * maxb, 4 * old_maxb, 6 * old_maxb)) {
			ca->beta = HTCP_BETA_MIN;
			ca->modeswitch = 0;
			return;
		}
	}
	if (ca->modeswitch && min_rtt > HTCP_MS_TO_J(10) && max_rtt) {
		__u32 b = (min_rtt << 7) / max_rtt;

		if (b < HTCP_BETA_MIN)
			b = HTCP_BETA_MIN;
		else if (b > HTCP_BETA_MAX)
			b = HTCP_BETA_MAX;
		ca->beta = b;
	} else {
		ca->beta = HTCP_BETA_MIN;
		ca->modeswitch = 1;
	}
}

static __always_inline void htcp_alpha_update(struct zhtcp *ca)
{
	__u32 min_rtt = ca->min_rtt, factor = 1, diff = htcp_cong_time(ca);

	if (diff > HSCC_HZ) {
		diff -= HSCC_HZ;
		factor = 1 + (10 * diff + ((diff / 2) * (diff / 2) / HSCC_HZ)) / HSCC_HZ;
	}
	if (HTCP_RTT_SCALING && min_rtt) {
		__u32 scale = (HSCC_HZ << 3) / (10 * min_rtt);

		scale = min(max(scale, 1U << 2), 10U << 3); /* [0.5, 10] in Q3 */
		factor = (factor << 3) / scale;
		if (!factor)
			factor = 1;
	}
	ca->alpha = 2 * factor * ((1 << 7) - ca->beta);
	if (!ca->alpha)
		ca->alpha = HTCP_ALPHA_BASE;
}

SEC("struct_ops")
__u32 BPF_PROG(zhtcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zhtcp *ca = inet_csk_ca(sk);
	__u32 min_rtt = ca->min_rtt, max_rtt = ca->max_rtt, ss;

	htcp_beta_update(ca, min_rtt, max_rtt);
	htcp_alpha_update(ca);
	if (min_rtt > 0 && max_rtt > min_rtt) /* slowly fading memory of maxRTT */
		ca->max_rtt = min_rtt + ((max_rtt - min_rtt) * 95) / 100;
	ss = max((tp->snd_cwnd * ca->beta) >> 7, 2U);
	SIG(EV_LOSS, "%u %u %u %u %u %u %u %u", tp->snd_cwnd, ss, ca->alpha, ca->beta, ca->min_rtt, ca->max_rtt,
	    ca->maxb, htcp_cong_time(ca));
	return ss;
}

SEC("struct_ops")
void BPF_PROG(zhtcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zhtcp *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		return;
	}
	/* +α/cwnd per packet acknowledged */
	if ((tp->snd_cwnd_cnt * ca->alpha) >> 7 >= tp->snd_cwnd) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd++;
		tp->snd_cwnd_cnt = 0;
		htcp_alpha_update(ca);
	} else {
		tp->snd_cwnd_cnt += ca->pkts_acked;
	}
	ca->pkts_acked = 1;
}

SEC("struct_ops")
void BPF_PROG(zhtcp_state, struct sock *sk, __u8 new_state)
{
	struct zhtcp *ca = inet_csk_ca(sk);

	switch (new_state) {
	case TCP_CA_Open:
		if (ca->undo_last_cong) {
			ca->last_cong = jiffies32();
			ca->undo_last_cong = 0;
		}
		break;
	case TCP_CA_CWR:
	case TCP_CA_Recovery:
	case TCP_CA_Loss: /* htcp_reset(): a congestion event starts now */
		ca->undo_last_cong = ca->last_cong;
		ca->undo_max_rtt = ca->max_rtt;
		ca->undo_old_maxb = ca->old_maxb;
		ca->last_cong = jiffies32();
		break;
	}
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_htcp = {
	.init = (void *)zhtcp_init,
	.ssthresh = (void *)zhtcp_ssthresh,
	.cong_avoid = (void *)zhtcp_cong_avoid,
	.set_state = (void *)zhtcp_state,
	.undo_cwnd = (void *)zhtcp_undo_cwnd,
	.pkts_acked = (void *)zhtcp_acked,
	.name = "zoo_htcp",
};
