//! Scenes built in code: constructors for the scene file's types, each filling what it leaves
//! out with the value a scene file that leaves the key out gets (`SceneFile::new(..)` equals
//! the scene parsed from the TOML with only those keys; the tests below check it).

use super::file::{self, *};
use murmur_common::lbm::{CollisionModel, Rates};

impl SceneFile {
    /// A scene named `name` with these scales, lattice and domain, and everything else as a
    /// scene file leaving it out: BGK, no-slip walls on every face, at rest, no body force, no
    /// solids, forces every 100 steps, the default health bounds, 1000 steps checked every 100.
    /// Set the public fields (or use the `with_*` methods) for the rest.
    pub fn new(
        name: impl Into<String>,
        physical: Physical,
        lattice: LatticeConfig,
        domain: DomainConfig,
    ) -> SceneFile {
        SceneFile {
            name: name.into(),
            description: String::new(),
            collision: CollisionModel::default(),
            physical,
            lattice,
            domain,
            faces: Faces::default(),
            initial: Initial::default(),
            body_force: BodyForce::default(),
            solids: Vec::new(),
            forces: ForcesConfig::default(),
            immersed: ImmersedConfig::default(),
            health: HealthConfig::default(),
            run: RunConfig::default(),
            smoke: SmokeConfig::default(),
            view: ViewConfig::default(),
            statistics: None,
            flocks: Vec::new(),
            dir: Default::default(),
        }
    }

    /// The same scene with the collision operator `model`.
    pub fn with_collision(mut self, model: CollisionModel) -> SceneFile {
        self.collision = model;
        self
    }

    /// The same scene with these faces.
    pub fn with_faces(mut self, faces: Faces) -> SceneFile {
        self.faces = faces;
        self
    }

    /// The same scene with `solid` added after its solids.
    pub fn with_solid(mut self, solid: SolidConfig) -> SceneFile {
        self.solids.push(solid);
        self
    }
}

impl Physical {
    /// Characteristic length `length` (m), velocity `velocity` (m/s) and kinematic viscosity
    /// `viscosity` (m^2/s), water's density (1000 kg/m^3).
    pub fn new(length: f64, velocity: f64, viscosity: f64) -> Physical {
        Physical {
            length,
            velocity,
            viscosity,
            density: file::water(),
        }
    }

    /// The Reynolds number `U L / nu`.
    pub fn reynolds(&self) -> f64 {
        self.velocity * self.length / self.viscosity
    }
}

impl LatticeConfig {
    /// `resolution` cells across the characteristic length, lattice velocity 0.1 (lattice Mach
    /// 0.17) and the MRT models' default rates.
    pub fn new(resolution: u32) -> LatticeConfig {
        LatticeConfig {
            resolution,
            velocity: file::default_u_lb(),
            bulk_rate: Rates::DEFAULT_BULK,
            high_rate: Rates::DEFAULT_HIGH,
            acm_lambda: Rates::DEFAULT_LAMBDA,
            les: Default::default(),
            smagorinsky: file::DEFAULT_SMAGORINSKY,
            wale: file::DEFAULT_WALE,
        }
    }

    /// The same lattice with `velocity` (lattice units, cells per step) representing the
    /// characteristic velocity: smaller is more accurate and takes more steps per second.
    pub fn with_velocity(mut self, velocity: f64) -> LatticeConfig {
        self.velocity = velocity;
        self
    }
}

impl DomainConfig {
    /// A box of `size` m along x, y, z (each a whole number of cells).
    pub fn size(size: [f64; 3]) -> DomainConfig {
        DomainConfig {
            size: Some(size),
            cells: None,
        }
    }

    /// A box of `cells` fluid cells along x, y, z.
    pub fn cells(cells: [u32; 3]) -> DomainConfig {
        DomainConfig {
            size: None,
            cells: Some(cells),
        }
    }
}

impl Faces {
    /// A channel along x: a uniform inlet at `U` on `x_min` (no ramp), a pressure outlet on
    /// `x_max`, `sides` on both y faces and `depth` on both z faces (e.g.
    /// [`FaceConfig::Periodic`] for a 2D flow one cell deep).
    pub fn channel_x(sides: FaceConfig, depth: FaceConfig) -> Faces {
        Faces {
            x_min: FaceConfig::inlet(0.0),
            x_max: FaceConfig::outlet(),
            y_min: sides.clone(),
            y_max: sides,
            z_min: depth.clone(),
            z_max: depth,
        }
    }
}

impl FaceConfig {
    /// A uniform inlet at `U` along the inward normal, ramped up over `ramp` s (0: at once).
    pub fn inlet(ramp: f64) -> FaceConfig {
        FaceConfig::Inlet {
            velocity: None,
            profile: Profile::Uniform,
            ramp,
            gust: None,
        }
    }

    /// A pressure outlet at the reference density, without a sponge layer.
    pub fn outlet() -> FaceConfig {
        FaceConfig::Outlet {
            density: None,
            sponge: None,
        }
    }
}

impl SolidConfig {
    /// A fixed solid of `shape` centred at `position` (m from the domain's origin): unnamed
    /// (named after its shape), not rotated, scale 1, the reference area from its shape,
    /// samples 0.5 cells apart, seed 1.
    pub fn new(shape: ShapeConfig, position: [f64; 3]) -> SolidConfig {
        SolidConfig {
            name: None,
            shape,
            position,
            orientation: None,
            scale: file::unit(),
            motion: MotionConfig::default(),
            reference_area: None,
            spacing: None,
            samples_per_cell: None,
            seed: file::one_u64(),
            boundary: Default::default(),
        }
    }

    /// The same solid named `name` (in messages and in [`crate::Fluid::forces`]).
    pub fn named(mut self, name: impl Into<String>) -> SolidConfig {
        self.name = Some(name.into());
        self
    }

    /// The same solid moving as `motion` says.
    pub fn moving(mut self, motion: MotionConfig) -> SolidConfig {
        self.motion = motion;
        self
    }
}

impl ShapeConfig {
    /// A sphere of `radius` m.
    pub fn sphere(radius: f64) -> ShapeConfig {
        ShapeConfig::Sphere { radius }
    }

    /// A closed cylinder of `radius` and `length` m along z.
    pub fn cylinder(radius: f64, length: f64) -> ShapeConfig {
        ShapeConfig::Cylinder {
            radius,
            length,
            caps: file::yes(),
            axis: file::z_axis(),
        }
    }

    /// An open tube (a cylinder without end caps) of `radius` and `length` m along z: the
    /// cylinder of a 2D flow, through a periodic depth.
    pub fn tube(radius: f64, length: f64) -> ShapeConfig {
        ShapeConfig::Cylinder {
            radius,
            length,
            caps: false,
            axis: file::z_axis(),
        }
    }
}

impl Orientation {
    /// A rotation by `degrees` about `axis`.
    pub fn axis_angle(axis: [f64; 3], degrees: f64) -> Orientation {
        Orientation {
            axis: Some(axis),
            angle: Some(degrees),
            quaternion: None,
        }
    }
}

impl TaylorGreen {
    /// A vortex of peak velocity `amplitude` m/s and the wavelength `physical.length`.
    pub fn new(amplitude: f64) -> TaylorGreen {
        TaylorGreen {
            amplitude,
            wavelength: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_scene_equals_the_parsed_minimal_file() {
        let text = r#"
            name = "box"
            [physical]
            length = 1.0
            velocity = 0.5
            viscosity = 0.01
            [lattice]
            resolution = 16
            [domain]
            cells = [16, 8, 4]
            [faces]
            x_min = { type = "inlet" }
            x_max = { type = "outlet" }
            y_min = { type = "free-slip" }
            y_max = { type = "free-slip" }
            z_min = { type = "periodic" }
            z_max = { type = "periodic" }
            [[solids]]
            shape = { type = "cylinder", radius = 0.25, length = 0.25, caps = false }
            position = [0.5, 0.25, 0.125]
        "#;
        let parsed = SceneFile::parse(text).unwrap();
        let built = SceneFile::new(
            "box",
            Physical::new(1.0, 0.5, 0.01),
            LatticeConfig::new(16),
            DomainConfig::cells([16, 8, 4]),
        )
        .with_faces(Faces::channel_x(
            FaceConfig::FreeSlip {},
            FaceConfig::Periodic {},
        ))
        .with_solid(SolidConfig::new(
            ShapeConfig::tube(0.25, 0.25),
            [0.5, 0.25, 0.125],
        ));
        assert_eq!(built, parsed);
        assert!((built.physical.reynolds() - 50.0).abs() < 1e-12);
    }

    #[test]
    fn shapes_equal_their_parsed_keys() {
        let text = r#"
            name = "s"
            [physical]
            length = 1.0
            velocity = 1.0
            viscosity = 0.01
            [lattice]
            resolution = 8
            [domain]
            size = [2.0, 2.0, 2.0]
            [[solids]]
            shape = { type = "cylinder", radius = 0.2, length = 0.5 }
            position = [1.0, 1.0, 1.0]
            [[solids]]
            name = "ball"
            shape = { type = "sphere", radius = 0.3 }
            position = [1.0, 1.0, 1.0]
            orientation = { axis = [0.0, 1.0, 0.0], angle = 30.0 }
        "#;
        let parsed = SceneFile::parse(text).unwrap();
        let mut ball = SolidConfig::new(ShapeConfig::sphere(0.3), [1.0; 3]).named("ball");
        ball.orientation = Some(Orientation::axis_angle([0.0, 1.0, 0.0], 30.0));
        let built = SceneFile::new(
            "s",
            Physical::new(1.0, 1.0, 0.01),
            LatticeConfig::new(8),
            DomainConfig::size([2.0; 3]),
        )
        .with_solid(SolidConfig::new(ShapeConfig::cylinder(0.2, 0.5), [1.0; 3]))
        .with_solid(ball);
        assert_eq!(built, parsed);
    }
}
