//! Who this process is among the ranks of a run, from the command line and the environment.
//!
//! Read in this order (the first that names a world of more than one rank wins):
//! 1. `MURMUR_RANK` / `MURMUR_WORLD_SIZE` / `MURMUR_LOCAL_RANK`: set by `murmur ... --gpus N`
//!    for the processes it starts ([`super::spawn`]);
//! 2. Open MPI's `mpirun`: `OMPI_COMM_WORLD_RANK` / `_SIZE` / `_LOCAL_RANK`;
//! 3. Slurm's `srun`: `SLURM_PROCID` / `SLURM_NTASKS` / `SLURM_LOCALID`;
//! 4. the convention of `torchrun` and others: `RANK` / `WORLD_SIZE` / `LOCAL_RANK`.
//!
//! The rendezvous (how the ranks find each other) comes from `--rendezvous` or
//! `MURMUR_RENDEZVOUS`.

use super::rendezvous::Rendezvous;
use super::CommError;

/// The command-line options of a run on several GPUs (flattened into `fluid run`,
/// `flock run` and their benches).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Ranks {
    /// Run on N GPUs of this machine: starts N processes, one per GPU, joined by NCCL (GPU to
    /// GPU). With 1: one rank through the same slab code on this process's GPU (left out: the
    /// plain single-GPU step). Under mpirun or srun leave it out: the launcher's variables name
    /// the ranks.
    #[arg(long, value_name = "N")]
    pub gpus: Option<usize>,
    /// How the ranks meet: `file:PATH` (a file all ranks can read; rank 0 writes it) or
    /// `tcp:HOST:PORT` (rank 0 listens there). Needed under mpirun or srun; `--gpus` picks a
    /// file itself. Also read from MURMUR_RENDEZVOUS.
    #[arg(long, value_name = "SPEC")]
    pub rendezvous: Option<String>,
    /// Seconds a rank waits for the others (to meet, or to finish a step) before it aborts the
    /// communicator and stops with an error naming what it waited for.
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0)]
    pub rank_timeout: f64,
}

/// This process's place among the ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct RankEnv {
    pub rank: usize,
    pub size: usize,
    /// Rank among the ranks of this machine: the GPU it uses.
    pub local_rank: usize,
    /// Which launcher named the ranks (for messages).
    pub source: &'static str,
    pub rendezvous: Option<Rendezvous>,
    pub timeout: std::time::Duration,
}

/// The variable sets that name ranks: (source, rank, size, local rank).
const SOURCES: [(&str, &str, &str, &str); 4] = [
    (
        "murmur --gpus",
        "MURMUR_RANK",
        "MURMUR_WORLD_SIZE",
        "MURMUR_LOCAL_RANK",
    ),
    (
        "mpirun",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK",
    ),
    ("srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    ("RANK/WORLD_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
];

impl RankEnv {
    /// The ranks of this process from `vars` (the environment) and the options. `None`: a
    /// single-rank run (no variables, or a world of one).
    pub fn detect(
        opts: &Ranks,
        vars: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<RankEnv>, CommError> {
        let timeout = timeout_of(opts.rank_timeout)?;
        for (source, r, s, l) in SOURCES {
            let (Some(rank), Some(size)) = (vars(r), vars(s)) else {
                continue;
            };
            let parse = |name: &str, v: &str| -> Result<usize, CommError> {
                v.trim().parse().map_err(|_| {
                    CommError::Setup(format!("{name}={v:?} is not a rank number ({source})"))
                })
            };
            let rank = parse(r, &rank)?;
            let size = parse(s, &size)?;
            if size <= 1 {
                return Ok(None);
            }
            if rank >= size {
                return Err(CommError::Setup(format!(
                    "{r}={rank} is not below {s}={size} ({source})"
                )));
            }
            let local_rank = match vars(l) {
                Some(v) => parse(l, &v)?,
                None => rank,
            };
            let spec = opts
                .rendezvous
                .clone()
                .or_else(|| vars("MURMUR_RENDEZVOUS"));
            let rendezvous = spec.as_deref().map(Rendezvous::parse).transpose()?;
            if rendezvous.is_none() {
                return Err(CommError::Setup(format!(
                    "{size} ranks ({source}) need a rendezvous: --rendezvous file:PATH or \
                     tcp:HOST:PORT (or MURMUR_RENDEZVOUS)"
                )));
            }
            return Ok(Some(RankEnv {
                rank,
                size,
                local_rank,
                source,
                rendezvous,
                timeout,
            }));
        }
        Ok(None)
    }

    /// A world of this one process (rank 0 of 1 on GPU 0, a rendezvous file in the temporary
    /// folder): the multi-rank code path on one GPU, to measure what it costs there.
    pub fn single(opts: &Ranks) -> Result<RankEnv, CommError> {
        let file = std::env::temp_dir().join(format!("murmur-rank-{}.id", std::process::id()));
        Ok(RankEnv {
            rank: 0,
            size: 1,
            local_rank: 0,
            source: "--gpus 1",
            rendezvous: Some(Rendezvous::File(file)),
            timeout: timeout_of(opts.rank_timeout)?,
        })
    }

    /// `env` (the ranks a launcher named), or without one and with `--gpus 1` a world of one
    /// ([`RankEnv::single`]): what the scaling and check commands run on.
    pub fn or_single(env: Option<RankEnv>, opts: &Ranks) -> Result<Option<RankEnv>, CommError> {
        match env {
            None if opts.gpus == Some(1) => RankEnv::single(opts).map(Some),
            env => Ok(env),
        }
    }

    /// [`RankEnv::detect`] over the process environment.
    pub fn from_env(opts: &Ranks) -> Result<Option<RankEnv>, CommError> {
        RankEnv::detect(opts, &|k| std::env::var(k).ok())
    }
}

/// This process's rank when a launcher names a world of several ranks (for messages); `None`
/// otherwise.
pub fn rank_label() -> Option<usize> {
    SOURCES.iter().find_map(|(_, r, s, _)| {
        let rank: usize = std::env::var(r).ok()?.trim().parse().ok()?;
        let size: usize = std::env::var(s).ok()?.trim().parse().ok()?;
        (size > 1 && rank < size).then_some(rank)
    })
}

/// The rank timeout as a duration (a clear error for nonsense).
pub fn timeout_of(seconds: f64) -> Result<std::time::Duration, CommError> {
    if !(seconds.is_finite() && seconds > 0.0 && seconds < 1e7) {
        return Err(CommError::Setup(format!(
            "--rank-timeout must be a positive number of seconds, got {seconds}"
        )));
    }
    Ok(std::time::Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn detect(pairs: &[(&str, &str)], opts: &Ranks) -> Result<Option<RankEnv>, CommError> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RankEnv::detect(opts, &|k| m.get(k).cloned())
    }

    fn opts() -> Ranks {
        Ranks {
            rank_timeout: 30.0,
            ..Ranks::default()
        }
    }

    #[test]
    fn no_variables_is_one_rank() {
        assert_eq!(detect(&[], &opts()).unwrap(), None);
        assert_eq!(
            detect(&[("RANK", "0"), ("WORLD_SIZE", "1")], &opts()).unwrap(),
            None
        );
    }

    /// `--gpus 1` without a launcher is a world of one; a launcher's ranks are kept.
    #[test]
    fn one_gpu_is_a_world_of_one() {
        let one = Ranks {
            gpus: Some(1),
            ..opts()
        };
        let e = RankEnv::or_single(None, &one).unwrap().unwrap();
        assert_eq!((e.rank, e.size, e.local_rank), (0, 1, 0));
        assert!(matches!(e.rendezvous, Some(Rendezvous::File(_))));
        assert_eq!(RankEnv::or_single(None, &opts()).unwrap(), None);
        let vars = [
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MURMUR_RENDEZVOUS", "file:/x"),
        ];
        let two = detect(&vars, &opts()).unwrap();
        assert_eq!(RankEnv::or_single(two.clone(), &one).unwrap(), two);
    }

    #[test]
    fn launchers_are_read_in_order() {
        let vars = [
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "16"),
            ("MURMUR_RENDEZVOUS", "tcp:node0:29500"),
        ];
        let e = detect(&vars, &opts()).unwrap().unwrap();
        assert_eq!(
            (e.rank, e.size, e.local_rank, e.source),
            (3, 8, 1, "mpirun")
        );
        let vars = [
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "16"),
            ("SLURM_LOCALID", "1"),
        ];
        let mut o = opts();
        o.rendezvous = Some("file:/shared/rdv".into());
        let e = detect(&vars, &o).unwrap().unwrap();
        assert_eq!((e.rank, e.size, e.local_rank, e.source), (5, 16, 1, "srun"));
        // LOCAL_RANK missing: the rank itself.
        let e = detect(&[("RANK", "1"), ("WORLD_SIZE", "2")], &o)
            .unwrap()
            .unwrap();
        assert_eq!(e.local_rank, 1);
    }

    #[test]
    fn bad_variables_are_one_line_errors() {
        let o = Ranks {
            rendezvous: Some("file:/tmp/x".into()),
            ..opts()
        };
        let e = detect(&[("RANK", "x"), ("WORLD_SIZE", "2")], &o).unwrap_err();
        assert!(e.to_string().contains("not a rank number"), "{e}");
        let e = detect(&[("RANK", "2"), ("WORLD_SIZE", "2")], &o).unwrap_err();
        assert!(e.to_string().contains("not below"), "{e}");
        let e = detect(&[("RANK", "0"), ("WORLD_SIZE", "2")], &opts()).unwrap_err();
        assert!(e.to_string().contains("need a rendezvous"), "{e}");
        assert!(timeout_of(0.0).is_err());
        assert!(timeout_of(f64::NAN).is_err());
    }
}
