//! One flash crowd over a range of seeds (`cr-sim crowd --seed FIRST..LAST`):
//! each seed's crowd, resumed against its baseline, and what the seeds say
//! together.
//!
//! A crowd of ten has ten completion times per arm, so its p95 is its
//! slowest client: one seed's p95 ratio says which arm's slowest client was
//! unluckier, and varies more from seed to seed than the distributions do.
//! The summary gives both readings: each seed's ratios (their mean, their
//! worst, and how many seeds resumed slower), and the ratios of the
//! completions pooled over every seed (the median and p95 of all the
//! clients of all the seeds, resumed over baseline).

use std::ops::RangeInclusive;

use serde::Serialize;

use crate::crowd::{self, mean, ArmReport, Crowd, CrowdReport};
use crate::error::SimError;
use crate::report::round3;

/// The JSON document of `cr-sim crowd --seed FIRST..LAST --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedsReport {
    /// Each seed's report, in seed order.
    pub seeds: Vec<CrowdReport>,
    /// What the seeds say together.
    pub summary: SeedsSummary,
}

/// The seeds' crowds together, resumed over baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedsSummary {
    /// Crowds run (one per seed).
    pub runs: usize,
    /// The mean over the seeds of each one's median completion ratio.
    pub median_ratio_mean: Option<f64>,
    /// The largest of the seeds' median completion ratios.
    pub median_ratio_max: Option<f64>,
    /// The mean over the seeds of each one's p95 completion ratio.
    pub p95_ratio_mean: Option<f64>,
    /// The largest of the seeds' p95 completion ratios.
    pub p95_ratio_max: Option<f64>,
    /// Seeds whose resumed crowd had a median or a p95 above the
    /// baseline's.
    pub slower_runs: usize,
    /// The median completion of every client of every seed, resumed over
    /// baseline.
    pub pooled_median_ratio: Option<f64>,
    /// The p95 completion of every client of every seed (nearest rank),
    /// resumed over baseline.
    pub pooled_p95_ratio: Option<f64>,
    /// Packets the resumed crowds lost, all seeds.
    pub lost_resumed: u64,
    /// Packets the baseline crowds lost, all seeds.
    pub lost_baseline: u64,
    /// Clients whose jump retreated, all seeds.
    pub retreated: usize,
    /// Clients that jumped, all seeds.
    pub engaged: usize,
    /// The lowest Jain index of a resumed crowd.
    pub jain_min: Option<f64>,
    /// The least and the most of the link an incumbent kept while jumps
    /// were validated, resumed (with `--competing`).
    pub incumbent_in_jumps: Option<(f64, f64)>,
    /// The same over the same stretch beside the baseline crowd.
    pub incumbent_in_jumps_baseline: Option<(f64, f64)>,
}

/// Runs `crowd` once per seed in `seeds` (its own seed ignored).
pub fn run(crowd: &Crowd, seeds: RangeInclusive<u64>) -> Result<SeedsReport, SimError> {
    let reports = seeds
        .map(|seed| {
            crowd::run(&Crowd {
                seed,
                ..crowd.clone()
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let summary = SeedsSummary::of(&reports);
    Ok(SeedsReport {
        seeds: reports,
        summary,
    })
}

impl SeedsSummary {
    /// The summary of `reports`, one per seed.
    pub fn of(reports: &[CrowdReport]) -> SeedsSummary {
        let ratios: Vec<(Option<f64>, Option<f64>)> = reports
            .iter()
            .map(|r| {
                (
                    r.ratio(|a| a.median_completion_s),
                    r.ratio(|a| a.p95_completion_s),
                )
            })
            .collect();
        let medians: Vec<f64> = ratios.iter().filter_map(|&(median, _)| median).collect();
        let p95s: Vec<f64> = ratios.iter().filter_map(|&(_, p95)| p95).collect();
        let above = |x: Option<f64>| x.is_some_and(|x| x > 1.0);
        let slower_runs = ratios
            .iter()
            .filter(|&&(median, p95)| above(median) || above(p95))
            .count();
        let pooled = |arm: fn(&CrowdReport) -> &ArmReport| -> Vec<f64> {
            reports
                .iter()
                .flat_map(|r| arm(r).connections.iter().filter_map(|c| c.completion_s))
                .collect()
        };
        let (resumed, baseline) = (pooled(|r| &r.resume), pooled(|r| &r.baseline));
        let pooled_ratio = |quantile: fn(&[f64]) -> Option<f64>| {
            let (r, b) = (quantile(&resumed)?, quantile(&baseline)?);
            (b > 0.0).then(|| round3(r / b))
        };
        let range = |arm: fn(&CrowdReport) -> &ArmReport| {
            let shares: Vec<f64> = reports
                .iter()
                .filter_map(|r| arm(r).incumbent_link_share_in_jumps)
                .collect();
            let min = shares.iter().copied().reduce(f64::min)?;
            let max = shares.iter().copied().reduce(f64::max)?;
            Some((min, max))
        };
        SeedsSummary {
            runs: reports.len(),
            median_ratio_mean: mean(&medians).map(round3),
            median_ratio_max: medians.iter().copied().reduce(f64::max).map(round3),
            p95_ratio_mean: mean(&p95s).map(round3),
            p95_ratio_max: p95s.iter().copied().reduce(f64::max).map(round3),
            slower_runs,
            pooled_median_ratio: pooled_ratio(crowd::median),
            pooled_p95_ratio: pooled_ratio(|v| crowd::percentile(v, 0.95)),
            lost_resumed: reports.iter().map(|r| r.resume.lost_packets).sum(),
            lost_baseline: reports.iter().map(|r| r.baseline.lost_packets).sum(),
            retreated: reports.iter().map(|r| r.resume.retreated).sum(),
            engaged: reports.iter().map(|r| r.resume.engaged).sum(),
            jain_min: reports
                .iter()
                .filter_map(|r| r.resume.jain_fairness)
                .reduce(f64::min),
            incumbent_in_jumps: range(|r| &r.resume),
            incumbent_in_jumps_baseline: range(|r| &r.baseline),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;
    use std::time::Duration;

    /// Two seeds of a small crowd: the summary counts both, and its pooled
    /// figures come from all their clients.
    #[test]
    fn the_summary_pools_every_seeds_clients() {
        let crowd = Crowd {
            clients: 3,
            rate: Rate::mbit(20),
            rtt: Duration::from_millis(100),
            size: 200_000,
            ..Crowd::default()
        };
        let report = run(&crowd, 1..=2).expect("the crowds run");
        assert_eq!(report.seeds.len(), 2);
        assert_eq!(
            report
                .seeds
                .iter()
                .map(|r| r.crowd.seed)
                .collect::<Vec<_>>(),
            [1, 2]
        );
        let summary = &report.summary;
        assert_eq!(summary.runs, 2);
        let lost: u64 = report.seeds.iter().map(|r| r.resume.lost_packets).sum();
        assert_eq!(summary.lost_resumed, lost);
        // Six completions per arm: the pooled p95 is each arm's slowest
        // client of either seed.
        let slowest = |arm: fn(&CrowdReport) -> Option<f64>| {
            report
                .seeds
                .iter()
                .filter_map(arm)
                .reduce(f64::max)
                .unwrap()
        };
        let expected =
            slowest(|r| r.resume.max_completion_s) / slowest(|r| r.baseline.max_completion_s);
        let pooled = summary.pooled_p95_ratio.expect("completions");
        assert!((pooled - expected).abs() < 1e-3, "{pooled} vs {expected}");
        let worst = summary.p95_ratio_max.expect("ratios");
        assert!(summary.p95_ratio_mean.expect("ratios") <= worst);
    }
}
