import type { DeviceRepository, ListedDevice } from '../../../shared/db/repositories/device.repository';
import { notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';

/** Told when a device is retired, so every gateway stops accepting its tokens (PrincipalCache). */
export interface DeviceRevocations {
  revoked(userId: string): Promise<void>;
}

export type OwnDevice = ListedDevice & { current: boolean };

/**
 * A signed-in user's own devices: the clients they signed in on (the devices of app passwords and
 * links are listed with those), and retiring any of them. A retired device's tokens, sessions, app
 * password and link stop working: the principal lookup and the credentials' lookups require an
 * active device, and the revocation makes every gateway's principal cache forget the user at once.
 */
export class UserDevicesService {
  constructor(
    private readonly devices: DeviceRepository,
    private readonly revocations: DeviceRevocations,
  ) {}

  async list(who: { userId: string; deviceId: string }): Promise<OwnDevice[]> {
    const devices = await this.devices.listClients(who.userId);
    return devices.map((d) => ({ ...d, current: d.id === who.deviceId }));
  }

  async retire(userId: string, id: string): Promise<void> {
    if (!isId(id) || !(await this.devices.retire(userId, id, new Date()))) throw notFound('no such device');
    await this.revocations.revoked(userId);
  }
}
