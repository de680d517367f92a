import { loadUserConfig } from '../core/config/config';
import { settingsFromConfig } from '../core/config/settings';
import { resolveEngines } from '../../engines';
import { InputError } from './io';

/**
 * Loads the config file in force (`--config` > $VERDICT_CONFIG > the default file, see locateConfig), its settings
 * and the engines it defines. `configFile` is null when no file is in force.
 * @throws InputError naming the file and field
 */
export function loadEngines(configPath: string | undefined) {
  try {
    const { config, file: configFile, shown } = loadUserConfig(configPath);
    return { config, configFile, settings: settingsFromConfig(config, shown), engines: resolveEngines(config.engines, configFile ?? undefined) };
  } catch (e) {
    throw new InputError((e as Error).message);
  }
}
