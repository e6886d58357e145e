/** What every Studio route knows about the launch. */
export interface StudioEnv {
  /** The project folder `svc dev` was started in. */
  projectDir: string;
}
